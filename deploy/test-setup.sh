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
  sox lame espeak-ng python3 python3-numpy ffmpeg \
  `# networks of test hosts (namespaces, veth, drops), the benchmarks' comparison, instruction counts` \
  iproute2 nftables snapserver snapclient valgrind \
  `# a machine whose cores are busy, for the benchmarks' continuity rows` \
  stress-ng \
  `# the lyric screens in a real terminal and a real headless browser` \
  tmux chromium fonts-dejavu-core \
  `# media keys (MPRIS) driven by playerctl; packages built, checked and installed into a clean root` \
  playerctl dpkg-dev debootstrap systemd \
  `# the virtual sound card (bench/vcard): built here with gcc, played to by aplay in its test` \
  alsa-utils gcc libc6-dev \
  `# AirPlay as a source: the receiver the coordinator runs, a real sender (RAOP) for its test,` \
  `# and avahi-publish, which announces a stand-in phone's remote control by mDNS` \
  shairport-sync pulseaudio-module-raop avahi-utils \
  `# the README's MPD recipe, tested with MPD itself` \
  mpd mpc \
  `# the reference Sendspin player plays through PortAudio` \
  libportaudio2
# snapserver's, shairport-sync's and MPD's packages start system services; tutti's
# benchmark runs its own snapserver, the coordinator its own shairport-sync, the test its
# own MPD.
for service in snapserver shairport-sync mpd mpd.socket; do
  if systemctl is-enabled "$service" >/dev/null 2>&1; then
    sudo_=""; [ "$(id -u)" -ne 0 ] && sudo_="sudo"
    $sudo_ systemctl disable --now "$service" >/dev/null 2>&1 || true
  fi
done

# The virtual sound card (bench/vcard): an ALSA plugin whose rooms have crystals of their
# own, built and installed with its configuration (tutti_vcard:NAME,PPM).
bench/vcard/install

# A clean Debian root for the package test (Tests/.../PackageTests): debootstrap's
# minimal system with systemd and the libraries tutti's packages depend on (the test has
# no network to fetch them), made once and kept as a
# tarball outside the repository; the test unpacks a copy and installs the .deb into it
# with no network. The test packs the release binaries, and skips without them (CI builds
# none): without them no root is made, which spares CI minutes of downloading, unpacking
# and compressing beside its build.
root_cache=${TUTTI_TEST_ROOT:-/var/cache/tutti-test/bookworm-root-v5.tar.gz}
if [ ! -x .build/release/tutti ] || [ ! -x .build/release/tutti-follower ]; then
  [ -s "$root_cache" ] || echo "test-setup: no release build (deploy/setup.sh makes it), so no clean Debian root for the package test, which is skipped"
elif [ ! -s "$root_cache" ]; then
  echo "test-setup: making a clean Debian root for the package test (debootstrap, once)"
  sudo_=""; [ "$(id -u)" -ne 0 ] && sudo_="sudo"
  tmp=$(mktemp -d)
  # The Debian mirror this machine's apt uses (its sources), else debootstrap's own default.
  mirror=$(sed -n 's/^URIs: *\([^ ]*\).*/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | grep -v security | head -1 || true)
  [ -n "$mirror" ] || mirror=$(awk '$1 == "deb" && $3 == "bookworm" { print $2; exit }' /etc/apt/sources.list 2>/dev/null || true)
  $sudo_ debootstrap --variant=minbase \
    --include=adduser,systemd,libopus0,libflac12,libpulse0,libasound2,libnettle8,libhogweed6,libgmp10,libavformat59,libavcodec59,libavutil57,libswresample4,libswscale6,libavahi-client3,libdbus-1-3,libsqlite3-0,libstdc++6 \
    bookworm "$tmp" ${mirror:+"$mirror"} >/dev/null
  $sudo_ mkdir -p "$(dirname "$root_cache")"
  $sudo_ tar -C "$tmp" -czf "$root_cache.part" . && $sudo_ mv "$root_cache.part" "$root_cache"
  $sudo_ rm -rf "$tmp"
fi


# Sendspin's reference implementation (the `sendspin` CLI and aiosendspin, from PyPI), the judge
# of tutti's Sendspin: it needs Python 3.12 or later, which Debian 12 does not ship; this
# machine image has one under pyenv. A virtual environment outside the repository, made once
# (TUTTI_SENDSPIN_VENV moves it); the tests find its python there.
sendspin_venv=${TUTTI_SENDSPIN_VENV:-/var/cache/tutti-test/sendspin-venv}
sendspin_version=9.0.0
installed=""
[ -x "$sendspin_venv/bin/sendspin" ] && installed=$("$sendspin_venv/bin/python" -m pip show sendspin 2>/dev/null | sed -n 's/^Version: //p')
if [ "$installed" != "$sendspin_version" ]; then
  python=""
  for candidate in python3.13 python3.12 "${HOME:-/root}"/.pyenv/versions/3.1[2-9]*/bin/python3 /root/.pyenv/versions/3.1[2-9]*/bin/python3; do
    if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
      python=$(command -v "$candidate")
      break
    fi
  done
  if [ -z "$python" ]; then
    echo "test-setup: no Python 3.12 or later for Sendspin's reference implementation (install one, e.g. with pyenv)" >&2
    exit 1
  fi
  case "$(basename "$sendspin_venv")" in
    *sendspin*) ;;
    *) echo "test-setup: TUTTI_SENDSPIN_VENV must name a folder of its own (its name with 'sendspin' in it)" >&2; exit 1 ;;
  esac
  sudo_=""; [ "$(id -u)" -ne 0 ] && sudo_="sudo"
  $sudo_ mkdir -p "$(dirname "$sendspin_venv")"
  $sudo_ rm -rf "$sendspin_venv"
  $sudo_ "$python" -m venv "$sendspin_venv"
  $sudo_ "$sendspin_venv/bin/python" -m pip install --quiet "sendspin==$sendspin_version"
  echo "test-setup: Sendspin's reference implementation $sendspin_version in $sendspin_venv ($("$sendspin_venv/bin/python" --version))"
fi
