#!/bin/sh
# Installs the Debian 12 packages llm-fcgi needs to build, run and test
# (the tests also build and install the Debian package, check the systemd
# units, drive the chat page in chromium and start a throwaway PostgreSQL
# cluster for the Responses store).
# Needs root (or sudo). Safe to run again: apt-get skips what is there.
set -e
PKGS="build-essential autoconf automake libtool pkg-config
      libfcgi-dev libjson-c-dev uuid-dev libpcre2-dev libcurl4-openssl-dev
      libstb-dev libwebp-dev
      libsqlite3-dev libpq-dev sqlite3 postgresql
      nginx-light lighttpd curl daemontools
      debhelper dpkg-dev lintian systemd iproute2 openssl man-db groff-base bsdextrautils
      chromium libjs-marked qemu-user"
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
    # A fresh cloud VM often runs unattended upgrades (or cloud-init's
    # package step) at boot: wait for the package manager's locks instead
    # of failing with "Could not get lock". apt waits on the dpkg lock by
    # itself with DPkg::Lock::Timeout; the lists lock of `apt-get update`
    # is waited for here, retrying while apt says it is held.
    wait=${LLM_APT_LOCK_WAIT:-900}
    sh "$(dirname "$0")/apt-retry.sh" "$wait" $SUDO apt-get -o DPkg::Lock::Timeout="$wait" update -q
    sh "$(dirname "$0")/apt-retry.sh" "$wait" $SUDO env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout="$wait" \
        install -y -q $missing
fi
