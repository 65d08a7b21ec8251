/// The median of the last few values: rejects the odd wild reading (a sound server's
/// latency report taken just as it updated, a scheduling hiccup) without lagging a trend.
///
/// It keeps the window in arrival order (to know which value leaves) and in sorted order (to
/// read the median at once); both are sized once, so a render that asks for the median
/// allocates nothing.
public struct MedianFilter: Sendable {
    /// The window in arrival order, a ring once full.
    private var values: [Int64] = []
    /// The same values, sorted.
    private var ordered: [Int64] = []
    private var next = 0
    public let width: Int

    public init(width: Int) {
        precondition(width > 0)
        self.width = width
        values.reserveCapacity(width)
        ordered.reserveCapacity(width)
    }

    public var count: Int { values.count }

    public mutating func add(_ value: Int64) -> Int64 {
        if values.count < width {
            values.append(value)
        } else {
            ordered.remove(at: Self.position(of: values[next], in: ordered))
            values[next] = value
            next = (next + 1) % width
        }
        ordered.insert(value, at: Self.position(of: value, in: ordered))
        return median
    }

    public var median: Int64 {
        ordered.isEmpty ? 0 : ordered[ordered.count / 2]
    }

    public mutating func reset() {
        values.removeAll(keepingCapacity: true)
        ordered.removeAll(keepingCapacity: true)
        next = 0
    }

    /// The first index of `sorted` whose value is not below `value`.
    private static func position(of value: Int64, in sorted: [Int64]) -> Int {
        var low = 0, high = sorted.count
        while low < high {
            let middle = (low + high) / 2
            if sorted[middle] < value { low = middle + 1 } else { high = middle }
        }
        return low
    }
}
