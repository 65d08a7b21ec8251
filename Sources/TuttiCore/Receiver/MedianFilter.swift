/// The median of the last few values: rejects the odd wild reading (a sound server's
/// latency report taken just as it updated, a scheduling hiccup) without lagging a trend.
public struct MedianFilter: Sendable {
    private var values: [Int64] = []
    private var next = 0
    public let width: Int

    public init(width: Int) {
        precondition(width > 0)
        self.width = width
    }

    public var count: Int { values.count }

    public mutating func add(_ value: Int64) -> Int64 {
        if values.count < width {
            values.append(value)
        } else {
            values[next] = value
            next = (next + 1) % width
        }
        return median
    }

    public var median: Int64 {
        let sorted = values.sorted()
        return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
    }

    public mutating func reset() {
        values.removeAll(keepingCapacity: true)
        next = 0
    }
}
