#!/bin/sh
# Installs the Debian 12 packages llm-fcgi needs to build, run and test
# (the tests also build and install the Debian package, check the systemd
# units, drive the chat page in chromium and start a throwaway PostgreSQL
# cluster for the Responses store).
# Needs root (or sudo). Safe to run again: apt-get skips what is there.
set -e
PKGS="build-essential autoconf automake libtool pkg-config
      libfcgi-dev libjson-c-dev uuid-dev libpcre2-dev libcurl4-openssl-dev
      libsqlite3-dev libpq-dev sqlite3 postgresql
      nginx-light lighttpd curl daemontools
      debhelper dpkg-dev lintian systemd iproute2 openssl man-db groff-base bsdextrautils
      chromium libjs-marked"
# Node.js (for the tests' official `openai` client): use the one on the
# machine if there is one (it may come from outside Debian, with its own
# npm, which Debian's npm package conflicts with); else Debian's.
if ! command -v node >/dev/null 2>&1; then PKGS="$PKGS nodejs"; fi
if ! command -v npm >/dev/null 2>&1; then PKGS="$PKGS npm"; fi
SUDO=
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
missing=
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing="$missing $p"
done
if [ -n "$missing" ]; then
    echo "install-deps: installing$missing" >&2
    # The packages' own services (system nginx and lighttpd on port 80) are
    # not wanted: llm-fcgi runs its own instances. policy-rc.d keeps
    # invoke-rc.d from starting them during the install (two servers racing
    # for port 80 can make a package's configuration fail).
    policy=
    if [ ! -e /usr/sbin/policy-rc.d ]; then
        policy=/usr/sbin/policy-rc.d
        printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$policy" >/dev/null
        $SUDO chmod 755 "$policy"
        trap '$SUDO rm -f "$policy"' EXIT
    fi
    $SUDO apt-get update -q
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q $missing
fi
