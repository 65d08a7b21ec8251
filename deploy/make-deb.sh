#!/usr/bin/env bash
# Builds tutti's Debian packages for the architecture this machine runs on, from the
# release binaries (Swift's runtime linked in: no toolchain is needed where they go):
#   tutti            every role: /usr/bin/tutti, the coordinator's system service (a
#                    user of its own), the MPRIS bridge's user service, /etc/tutti/
#                    coordinator.toml, example files and man pages
#   tutti-follower   a room: /usr/bin/tutti-follower and its user service
# Usage: deploy/make-deb.sh [OUTDIR]   (default: .build/deb)
#   TUTTI_DEB_PREBUILT=1   use .build/release as it is (else it is built first)
#   TUTTI_DEB_COMPRESSION  xz (the default: the smallest), zstd, gzip or none: the tests,
#                          which install the packages and throw them away, use zstd
#                          (a minute of xz on a slow core, a few seconds of zstd)
set -euo pipefail
cd "$(dirname "$0")/.."
. deploy/packages.sh
out=$(realpath -m "${1:-.build/deb}")
arch=$(dpkg --print-architecture)
version="0.4.$(git rev-list --count HEAD 2>/dev/null || echo 0)"
compression=${TUTTI_DEB_COMPRESSION:-xz}
case "$compression" in
  xz|zstd|gzip|none) ;;
  *) echo "make-deb: TUTTI_DEB_COMPRESSION is xz, zstd, gzip or none, not '$compression'" >&2; exit 1 ;;
esac
if [ "${TUTTI_DEB_PREBUILT:-0}" != 1 ]; then
  find_swift || { echo "make-deb: Swift 6 is needed to build (deploy/setup.sh)" >&2; exit 1; }
  for product in tutti tutti-follower; do swift build -c release --static-swift-stdlib --product "$product" >/dev/null; done
fi
for product in tutti tutti-follower; do
  test -x ".build/release/$product" || { echo "make-deb: .build/release/$product is missing (deploy/setup.sh builds it)" >&2; exit 1; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"

# The packages a binary's shared libraries come from, for Depends. libasound, libFLAC and
# libavahi-client are not among them (TuttiAudio, TuttiCodecs and TuttiDiscovery load them
# on first use: CALSALoader, CFLACLoader, CAvahiLoader), so the packages name them themselves.
depends() {
  objdump -p "$1" | awk '/NEEDED/ { print $2 }' | while read -r soname; do
    path=$(ldconfig -p | awk -v s="$soname" '$1 == s && /x86-64|aarch64|AArch64|libc6,/ { print $NF; exit }')
    [ -n "$path" ] || path=$(ldconfig -p | awk -v s="$soname" '$1 == s { print $NF; exit }')
    [ -n "$path" ] || { echo "make-deb: no library $soname on this machine" >&2; exit 1; }
    dpkg -S "$(realpath "$path")" 2>/dev/null | head -1 | cut -d: -f1 || dpkg -S "$path" | head -1 | cut -d: -f1
  done | sort -u | paste -sd, | sed 's/,/, /g'
}

# A man page from a command's --help.
manpage() { # NAME COMMAND...
  local name=$1; shift
  local summary
  summary=$("$@" --help | sed -n 's/^OVERVIEW: //p' | head -1)
  {
    echo ".TH ${name^^} 1 \"\" \"tutti $version\" \"tutti\""
    echo ".SH NAME"
    echo "$name \\- ${summary:-synchronized multi-room music}"
    echo ".SH DESCRIPTION"
    echo ".nf"
    "$@" --help | sed 's/\\/\\\\/g; s/^\./\\\&./'
    echo ".fi"
    echo ".SH SEE ALSO"
    echo "https://github.com/tutti (README.md, docs/) and /usr/share/doc/tutti/examples"
  } | gzip -9n
}

# Copies a binary without its debugging sections (the symbols Swift needs stay).
binary() { install -D -m 0755 "$1" "$2"; objcopy --strip-debug "$2"; }

control() { # DIR PACKAGE DEPENDS RECOMMENDS DESCRIPTION LONG [SUGGESTS]
  mkdir -p "$1/DEBIAN"
  cat > "$1/DEBIAN/control" <<CONTROL
Package: $2
Version: $version
Architecture: $arch
Maintainer: tutti developers <tutti@localhost>
Section: sound
Priority: optional
Depends: $3
Recommends: $4
${7:+Suggests: $7
}Installed-Size: $(du -ks "$1" | cut -f1)
Homepage: https://github.com/tutti
Description: $5
$(echo "$6" | fold -s -w 78 | sed 's/^/ /')
CONTROL
}

# --- tutti ---
root="$work/tutti"
binary .build/release/tutti "$root/usr/bin/tutti"
install -D -m 0644 deploy/systemd/tutti-coordinator.service "$root/usr/lib/systemd/system/tutti-coordinator.service"
install -D -m 0644 deploy/systemd/tutti-mpris.service "$root/usr/lib/systemd/user/tutti-mpris.service"
install -D -m 0644 deploy/config/coordinator.toml "$root/etc/tutti/coordinator.toml"
for role in coordinator follower lyrics ctl mpris; do
  install -D -m 0644 "deploy/config/$role.toml" "$root/usr/share/doc/tutti/examples/$role.toml"
done
install -D -m 0644 README.md "$root/usr/share/doc/tutti/README.md"
mkdir -p "$root/usr/share/man/man1"
manpage tutti .build/release/tutti > "$root/usr/share/man/man1/tutti.1.gz"
# (tutti-follower(1) comes with the tutti-follower package: the same options.)
for role in coordinator lyrics ctl mpris pair config demo; do
  manpage "tutti-$role" .build/release/tutti "$role" > "$root/usr/share/man/man1/tutti-$role.1.gz"
done
mkdir -p "$root/DEBIAN"
echo /etc/tutti/coordinator.toml > "$root/DEBIAN/conffiles"
cat > "$root/DEBIAN/postinst" <<'SCRIPT'
#!/bin/sh
set -e
if [ "$1" = configure ]; then
  # The coordinator's own user: its state (queue, house key, token) in /var/lib/tutti.
  if ! getent passwd tutti >/dev/null; then
    adduser --system --group --home /var/lib/tutti --no-create-home --gecos "tutti coordinator" tutti >/dev/null
  fi
  install -d -o tutti -g tutti -m 0750 /var/lib/tutti
  if [ -d /run/systemd/system ]; then systemctl daemon-reload >/dev/null 2>&1 || true; fi
fi
SCRIPT
cat > "$root/DEBIAN/prerm" <<'SCRIPT'
#!/bin/sh
set -e
if [ -d /run/systemd/system ] && [ "$1" = remove ]; then
  systemctl disable --now tutti-coordinator.service >/dev/null 2>&1 || true
fi
SCRIPT
cat > "$root/DEBIAN/postrm" <<'SCRIPT'
#!/bin/sh
set -e
if [ "$1" = purge ]; then
  # The house's state (its key, token, queue) goes with a purge only.
  rm -rf /var/lib/tutti
  if getent passwd tutti >/dev/null; then deluser --system tutti >/dev/null 2>&1 || true; fi
fi
if [ -d /run/systemd/system ]; then systemctl daemon-reload >/dev/null 2>&1 || true; fi
SCRIPT
chmod 0755 "$root/DEBIAN/postinst" "$root/DEBIAN/prerm" "$root/DEBIAN/postrm"
control "$root" tutti "$(depends .build/release/tutti), libasound2, libflac12, libavahi-client3, adduser" "avahi-daemon, pulseaudio | pipewire-pulse" \
  "synchronized multi-room music: coordinator, control, lyric screens" \
  "Every room of a house plays the same song at the same instant. This package holds every role of tutti: the coordinator (a system service under a user of its own), the follower, lyric screens, tutti ctl, and the MPRIS bridge for a desktop's media keys. A room needs only tutti-follower. The coordinator can be an AirPlay receiver with shairport-sync." \
  "shairport-sync"
dpkg-deb --root-owner-group -Z"$compression" --build "$root" "$out/tutti_${version}_${arch}.deb" >/dev/null

# --- tutti-follower ---
root="$work/tutti-follower"
binary .build/release/tutti-follower "$root/usr/bin/tutti-follower"
install -D -m 0644 deploy/systemd/tutti-follower.service "$root/usr/lib/systemd/user/tutti-follower.service"
install -D -m 0644 deploy/systemd/tutti-follower-alsa.service "$root/usr/lib/systemd/system/tutti-follower-alsa.service"
install -D -m 0644 deploy/config/follower.toml "$root/usr/share/doc/tutti-follower/examples/follower.toml"
mkdir -p "$root/usr/share/man/man1"
manpage tutti-follower .build/release/tutti-follower > "$root/usr/share/man/man1/tutti-follower.1.gz"
control "$root" tutti-follower "$(depends .build/release/tutti-follower), libasound2, libflac12, libavahi-client3" "avahi-daemon" \
  "synchronized multi-room music: a room's player" \
  "The follower of tutti alone, for the machine beside a speaker (a Raspberry Pi): it finds the coordinator on the network, locks its clock to the coordinator's and plays every sample at the instant the house plays it, through PulseAudio (or PipeWire's pulse server) where one runs, else straight to ALSA. A user service starts it with the sound server; a system service (tutti-follower-alsa) plays to ALSA on a machine with none. No sound server is installed with it."
dpkg-deb --root-owner-group -Z"$compression" --build "$root" "$out/tutti-follower_${version}_${arch}.deb" >/dev/null
ls -1 "$out"/*_"${version}"_"${arch}".deb
