import CoreMetrics
import Prometheus
import Synchronization

/// The process's metrics, in Prometheus's text format: one registry, also swift-metrics'
/// backend (so libraries' own metrics, as the control API's requests, land beside
/// tutti's). The only importer of swift-prometheus. Names and meanings: docs/metrics.md.
public enum HouseMetrics {
    /// Bootstrapped once, at first use.
    public static let registry: PrometheusCollectorRegistry = {
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        return registry
    }()

    /// The exposition (text format 0.0.4), after `refresh` brought the sampled values up
    /// to date.
    public static func exposition(refresh: () -> Void = {}) -> [UInt8] {
        refresh()
        return registry.emitToBuffer()
    }

    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    /// A metric's name and help, whole (`tutti_rooms`, no namespace or unit split off).
    static func descriptor(_ name: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(metricName: name, unitName: "", helpText: help)
    }
}

/// A Prometheus counter fed a running total kept elsewhere (the playout's statistics, an
/// atomic): it adds what the total grew by since the last time.
public final class TotalCounter: Sendable {
    private let counter: Prometheus.Counter
    private let last = Mutex<Int>(0)

    public init(_ name: String, _ help: String, labels: [(String, String)] = []) {
        counter = HouseMetrics.registry.makeCounter(descriptor: HouseMetrics.descriptor(name, help), labels: labels)
    }

    public func update(total: Int) {
        let grown = last.withLock { last in
            defer { last = max(last, total) }
            return total - last
        }
        if grown > 0 { counter.increment(by: Int64(grown)) }
    }

    public func increment() { counter.increment() }
}

/// A Prometheus gauge.
public final class GaugeValue: Sendable {
    private let gauge: Prometheus.Gauge

    public init(_ name: String, _ help: String, labels: [(String, String)] = []) {
        gauge = HouseMetrics.registry.makeGauge(descriptor: HouseMetrics.descriptor(name, help), labels: labels)
    }

    public func set(_ value: Double) { gauge.set(value) }
}

/// A histogram of durations, in seconds.
public final class DurationValues: Sendable {
    private let histogram: Prometheus.DurationHistogram

    public init(_ name: String, _ help: String, buckets: [Duration]) {
        histogram = HouseMetrics.registry.makeDurationHistogram(descriptor: HouseMetrics.descriptor(name, help), buckets: buckets)
    }

    public func record(nanoseconds: Int64) { histogram.record(.nanoseconds(nanoseconds)) }
}

/// A counter with one label whose values come as they happen (`tutti_commands_total` by
/// command): the registry hands back the same counter for the same value.
public struct LabelledCounter: Sendable {
    let name: String, help: String, label: String

    public init(_ name: String, _ help: String, label: String) {
        self.name = name
        self.help = help
        self.label = label
    }

    public func increment(_ value: String) {
        HouseMetrics.registry.makeCounter(descriptor: HouseMetrics.descriptor(name, help), labels: [(label, value)]).increment()
    }
}
