import Foundation

/// Prometheus's text exposition format (0.0.4), read strictly: every line a `# HELP`, a
/// `# TYPE` or a sample; names and labels well formed; a family's TYPE before its samples
/// and given once; values numbers; a histogram's buckets with `le`, rising, its +Inf
/// bucket equal to its count.
struct PrometheusText {
    struct Sample: Equatable {
        var name: String
        var labels: [String: String]
        var value: Double
    }

    struct Malformed: Error, CustomStringConvertible {
        let line: Int
        let text: String
        let why: String
        var description: String { "line \(line): \(why): \(text)" }
    }

    var samples: [Sample] = []
    var types: [String: String] = [:]
    var help: [String: String] = [:]

    /// The value of the sample `name` with these labels (all of them), if there is one.
    func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
        samples.first { sample in sample.name == name && labels.allSatisfy { key, value in sample.labels[key] == value } }?.value
    }

    init(_ text: String) throws {
        let name = #/[a-zA-Z_:][a-zA-Z0-9_:]*/#
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let fail = { (why: String) in Malformed(line: index + 1, text: String(line), why: why) }
            if line.isEmpty { continue }
            if line.hasPrefix("# HELP ") || line.hasPrefix("# TYPE ") {
                let parts = line.dropFirst(7).split(separator: " ", maxSplits: 1)
                guard let family = parts.first, (try? name.wholeMatch(in: family)) != nil else { throw fail("a bad metric name") }
                if line.hasPrefix("# HELP ") {
                    help[String(family)] = parts.count > 1 ? String(parts[1]) : ""
                } else {
                    guard parts.count == 2, ["counter", "gauge", "histogram", "summary", "untyped"].contains(parts[1]) else { throw fail("a bad type") }
                    guard types[String(family)] == nil else { throw fail("a second TYPE") }
                    guard !samples.contains(where: { Self.family(of: $0.name, types) == String(family) }) else { throw fail("TYPE after samples") }
                    types[String(family)] = String(parts[1])
                }
                continue
            }
            if line.hasPrefix("#") { continue }
            guard let match = try #/([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[^}"]|"(?:[^"\\]|\\.)*")*\})? ([^ ]+)( -?[0-9]+)?/#.wholeMatch(in: line) else { throw fail("not a sample") }
            var labels: [String: String] = [:]
            if let block = match.2 {
                let body = block.dropFirst().dropLast()
                var rest = Substring(body)
                while !rest.isEmpty {
                    guard let label = try #/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?/#.prefixMatch(in: rest) else { throw fail("a bad label") }
                    guard labels[String(label.1)] == nil else { throw fail("a label twice") }
                    labels[String(label.1)] = String(label.2)
                    rest = rest[label.range.upperBound...]
                }
            }
            let text = String(match.3)
            guard let value = ["+Inf": Double.infinity, "-Inf": -Double.infinity, "NaN": Double.nan][text] ?? Double(text) else { throw fail("not a number") }
            samples.append(Sample(name: String(match.1), labels: labels, value: value))
        }
        // Histograms: buckets with `le`, counts rising, +Inf equal to the count.
        for (family, type) in types where type == "histogram" {
            let buckets = samples.filter { $0.name == family + "_bucket" }
            var series: [[String: String]: [(Double, Double)]] = [:]
            for bucket in buckets {
                guard let le = bucket.labels["le"], let bound = le == "+Inf" ? .infinity : Double(le) else {
                    throw Malformed(line: 0, text: family, why: "a bucket without le")
                }
                var key = bucket.labels
                key["le"] = nil
                series[key, default: []].append((bound, bucket.value))
            }
            for (key, points) in series {
                let sorted = points.sorted { $0.0 < $1.0 }
                guard zip(sorted, sorted.dropFirst()).allSatisfy({ $0.1 <= $1.1 }) else { throw Malformed(line: 0, text: family, why: "buckets falling") }
                guard sorted.last?.0 == .infinity,
                      sorted.last?.1 == samples.first(where: { $0.name == family + "_count" && $0.labels == key })?.value else {
                    throw Malformed(line: 0, text: family, why: "+Inf bucket is not the count")
                }
            }
        }
    }

    static func family(of sample: String, _ types: [String: String]) -> String {
        for suffix in ["_bucket", "_count", "_sum"] where sample.hasSuffix(suffix) {
            let base = String(sample.dropLast(suffix.count))
            if types[base] == "histogram" || types[base] == "summary" { return base }
        }
        return sample
    }
}
