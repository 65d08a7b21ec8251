#!/usr/bin/env bash
# Sets up a Debian 12 machine to build and run tutti: installs what building it and
# running it need (nothing for tests: deploy/test-setup.sh, which deploy/test.sh calls),
# and builds it. With --demo, then runs `tutti demo`.
#   deploy/setup.sh           install and build (release)
#   deploy/setup.sh --demo    ... then play the demo house until Ctrl-C
#   deploy/setup.sh --packages   install only (CI installs the tests' packages meanwhile)
set -euo pipefail
cd "$(dirname "$0")/.."
. deploy/packages.sh

install_packages \
  `# build: the C libraries tutti wraps` \
  libopus-dev libflac-dev libasound2-dev nettle-dev libavformat-dev libavcodec-dev libavutil-dev libswresample-dev libswscale-dev \
  libavahi-client-dev libdbus-1-dev libsqlite3-dev pkg-config \
  `# the follower links the C++ runtime under Swift's statically (Package.swift)` \
  libstdc++-12-dev \
  `# run: a sound server, the house's discovery (mDNS) and the session bus for media keys` \
  pulseaudio pulseaudio-utils avahi-daemon dbus

[ "${1:-}" = "--packages" ] && exit 0

find_swift || { echo "setup: Swift 6 is needed: install it from swift.org (or swiftly) and run again" >&2; exit 1; }

# Swift's runtime is linked in (--static-swift-stdlib): the binaries run on a machine
# without a Swift toolchain, and the lean follower stays small in memory.
for product in tutti tutti-follower; do
  echo "setup: building $product (release)"
  rm -f ".build/release/$product"
  swift build -c release --static-swift-stdlib --product "$product" 2>&1 \
    | grep -Ev "^(\[|Building|Compiling|Write|Emitting|Planning)" || true
  test -x ".build/release/$product" || { echo "setup: the build of $product failed" >&2; exit 1; }
done
echo "setup: done: .build/release/tutti and .build/release/tutti-follower"

if [ "${1:-}" = "--demo" ]; then
  exec .build/release/tutti demo
fi
