#!/usr/bin/env bash
# Installs the system tools the test suite drives, when they are missing:
#   chromium  the headless browser for the `intercom ui` page test (test/ui/ui.process.test.ts)
#   tmux      the pseudo-terminal for the `intercom top` screen test
#   fonts-dejavu-core  only when the machine has no font at all (the page screenshot needs one)
# Idempotent and quiet: does nothing when all are present. Uses Debian's apt-get only.
# Exits non-zero with a message naming what could not be installed and how to install it by hand.
set -euo pipefail

missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v tmux >/dev/null 2>&1 || missing+=(tmux)
# Without any font the page's text renders as boxes in the screenshot (chromium only recommends fonts).
if [ -z "$(find /usr/share/fonts /usr/local/share/fonts -type f \( -name '*.ttf' -o -name '*.otf' \) -print -quit 2>/dev/null)" ]; then
  missing+=(fonts-dejavu-core)
fi
[ ${#missing[@]} -eq 0 ] && exit 0

fail() {
  echo "scripts/test-tools.sh: cannot install ${missing[*]}: $1" >&2
  echo "  install them by hand (Debian/Ubuntu: sudo apt-get install -y ${missing[*]}) and run the tests again" >&2
  exit 1
}

command -v apt-get >/dev/null 2>&1 || fail "apt-get is not available on this machine"
apt=(env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 -o Acquire::Retries=3 -qq)
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || fail "not root and sudo is not available"
  apt=(sudo -n "${apt[@]}")
fi

echo "scripts/test-tools.sh: installing ${missing[*]} (apt-get)" >&2
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# DPkg::Lock::Timeout: wait for another apt/dpkg run (up to 10 minutes) instead of failing on its lock.
# As root, apt verifies signatures as its sandbox user (_apt); where the temp dir is private to root
# (mode 700 /tmp), that user cannot write its files and the update fails "not signed": try again as root.
if ! "${apt[@]}" update >"$log" 2>&1; then
  if [ "$(id -u)" -ne 0 ] || ! "${apt[@]}" -o APT::Sandbox::User=root update >"$log" 2>&1; then
    cat "$log" >&2
    fail "apt-get update failed"
  fi
  apt+=(-o APT::Sandbox::User=root)
fi
if ! "${apt[@]}" install -y --no-install-recommends "${missing[@]}" >"$log" 2>&1; then
  cat "$log" >&2
  fail "apt-get install failed"
fi
for tool in chromium tmux; do
  command -v "$tool" >/dev/null 2>&1 || fail "$tool is still not on PATH after apt-get install"
done
