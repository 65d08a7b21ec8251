# Sourced by deploy/setup.sh and deploy/test-setup.sh: installs the Debian packages named
# that are not installed yet, quietly, with sudo when not root.
install_packages() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  echo "${0##*/}: installing ${missing[*]}"
  local sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# Puts Swift on PATH when it is installed in a usual place but not on PATH.
find_swift() {
  if ! command -v swift >/dev/null; then
    local d
    for d in /opt/swift/usr/bin /usr/share/swift/usr/bin; do [ -x "$d/swift" ] && export PATH="$d:$PATH"; done
  fi
  command -v swift >/dev/null
}
