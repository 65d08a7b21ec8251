#!/usr/bin/env bash
# Runs tutti's whole test suite: unit tests, in-memory end-to-end tests, and integration
# tests with real UDP sockets, a private PulseAudio server with null sinks (started by
# the tests themselves) and GStreamer decoding tutti's stream.
set -euo pipefail
cd "$(dirname "$0")/.."
. deploy/packages.sh
find_swift || { echo "test: Swift 6 is needed (deploy/setup.sh)" >&2; exit 1; }
# What the tests need beyond running tutti (GStreamer, Chromium, Snapcast, ...).
deploy/test-setup.sh
# The integration tests run the real binaries, which `swift test` builds with the tests (a
# `swift build --product` of each beforehand only planned and linked again: 10 s here).
if [ $# -gt 0 ]; then exec swift test "$@"; fi
# Unit tests first, then the integration tests on their own: they play in real time and
# measure timing, and on a two-core machine they should not share it with a burst of
# unit tests.
swift test --skip IntegrationTests
# The build's gigabytes written out first: a process that writes (a room's WAV, a log)
# while the kernel flushes them can wait on the disk for tens of milliseconds, and the
# first integration tests measure gaps of ten.
sync
exec swift test --filter IntegrationTests
