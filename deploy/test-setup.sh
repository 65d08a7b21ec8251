#!/usr/bin/env bash
# Installs what tutti's tests and benchmarks need beyond running it (deploy/setup.sh):
# deploy/test.sh and the benchmarks call it; nothing it installs is needed to play music.
set -euo pipefail
cd "$(dirname "$0")/.."
. deploy/packages.sh

install_packages \
  `# interoperability: GStreamer decodes tutti's stream (-bad has srtpdec)` \
  gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good gstreamer1.0-plugins-bad \
  `# audio tools for test material and analysis` \
  sox lame espeak-ng python3 python3-numpy \
  `# networks of test hosts (namespaces, veth, drops), the benchmarks' comparison, instruction counts` \
  iproute2 nftables snapserver snapclient valgrind \
  `# the lyric screens in a real terminal and a real headless browser` \
  tmux chromium fonts-dejavu-core \
  `# media keys (MPRIS) driven by playerctl; packages built, checked and installed into a clean root` \
  playerctl dpkg-dev debootstrap systemd
# snapserver's package starts a system service; tutti's benchmark runs its own.
if systemctl is-enabled snapserver >/dev/null 2>&1; then
  sudo_=""; [ "$(id -u)" -ne 0 ] && sudo_="sudo"
  $sudo_ systemctl disable --now snapserver >/dev/null 2>&1 || true
fi
