import Testing

/// Every integration test runs one at a time: they start real processes that play in real
/// time, and on a two-core machine they would otherwise compete for the CPU.
@Suite(.serialized) enum IntegrationTests {}
