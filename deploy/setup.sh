#!/usr/bin/env bash
# Sets up a Debian 12 machine for tutti: installs the system packages it builds and
# tests with, and builds it. With --demo, then runs `tutti demo`.
#   deploy/setup.sh           install and build (release)
#   deploy/setup.sh --demo    ... then play the demo house until Ctrl-C
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  # build: the C libraries tutti wraps
  libmpg123-dev libopus-dev libpulse-dev libgcrypt20-dev libsamplerate0-dev pkg-config
  # run: a sound server and its tools
  pulseaudio pulseaudio-utils
  # tests: interoperability (GStreamer; -bad has srtpdec), audio tools, the benchmark's comparison
  gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good gstreamer1.0-plugins-bad sox lame espeak-ng
  python3 python3-numpy snapserver snapclient valgrind iproute2 nftables
  # tests: the lyric screens in a real terminal and a real headless browser
  tmux chromium fonts-dejavu-core
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  # snapserver's package starts a system service; tutti's benchmark runs its own.
  $SUDO systemctl disable --now snapserver >/dev/null 2>&1 || true
fi

if ! command -v swift >/dev/null; then
  for d in /opt/swift/usr/bin /usr/share/swift/usr/bin; do [ -x "$d/swift" ] && export PATH="$d:$PATH"; done
fi
command -v swift >/dev/null || { echo "setup: Swift 6 is needed: install it from swift.org (or swiftly) and run again" >&2; exit 1; }

# Swift's runtime is linked in (--static-swift-stdlib): the binaries run on a machine
# without a Swift toolchain, and the lean follower stays small in memory.
for product in tutti tutti-follower; do
  echo "setup: building $product (release)"
  swift build -c release --static-swift-stdlib --product "$product" 2>&1 \
    | grep -Ev "^(\[|Building|Compiling|Write|Emitting|Planning)" || true
  test -x ".build/release/$product" || { echo "setup: the build of $product failed" >&2; exit 1; }
done
echo "setup: done: .build/release/tutti and .build/release/tutti-follower"

if [ "${1:-}" = "--demo" ]; then
  exec .build/release/tutti demo
fi
