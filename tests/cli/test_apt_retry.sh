#!/bin/sh
# test_apt_retry.sh - scripts/apt-retry.sh waits while apt reports a held
# lock and gives up on anything else. A stand-in for apt-get fails with
# apt's own lock messages a given number of times (no real lock is taken:
# other tests may be installing packages at the same time). Emits TAP.
top=${TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/llm-aptretry.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
n=0; failed=0
ok() { n=$((n + 1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=1; fi; }

# fake-apt FAILS MESSAGE: fails FAILS times printing MESSAGE, then succeeds
cat >"$tmp/fake-apt" <<'F'
#!/bin/sh
count=$(cat "$STATE" 2>/dev/null || echo 0)
echo $((count + 1)) >"$STATE"
if [ "$count" -lt "$1" ]; then printf '%s\n' "$2" >&2; exit 100; fi
echo "Reading package lists... Done"
F
chmod +x "$tmp/fake-apt"
lock='E: Could not get lock /var/lib/apt/lists/lock. It is held by process 4242 (unattended-upgr)'
front='E: Unable to acquire the dpkg frontend lock (/var/lib/dpkg/lock-frontend), is another process using it?'
export APT_RETRY_PAUSE=0

STATE=$tmp/s1; export STATE
sh "$top/scripts/apt-retry.sh" 60 "$tmp/fake-apt" 3 "$lock" >"$tmp/out" 2>"$tmp/err"
st=$?
ok $([ $st = 0 ] && [ "$(cat $tmp/s1)" = 4 ]; echo $?) "a held lists lock: waits and runs again until it succeeds (4 runs, exit $st)"
ok $(grep -q "waiting for the package manager's lock (held by process 4242 (unattended-upgr))" "$tmp/err"; echo $?) \
    "says who holds the lock"

STATE=$tmp/s2
sh "$top/scripts/apt-retry.sh" 60 "$tmp/fake-apt" 1 "$front" >/dev/null 2>&1
st=$?
ok $([ $st = 0 ] && [ "$(cat $tmp/s2)" = 2 ]; echo $?) "the dpkg frontend lock too (exit $st)"

STATE=$tmp/s3
sh "$top/scripts/apt-retry.sh" 60 "$tmp/fake-apt" 5 "E: Unable to locate package no-such-pkg" >/dev/null 2>"$tmp/err"
st=$?
ok $([ $st = 100 ] && [ "$(cat $tmp/s3)" = 1 ]; echo $?) "any other failure: its status at once, no retry (exit $st)"
ok $(grep -q 'Unable to locate package' "$tmp/err"; echo $?) "apt's own message is passed on"

STATE=$tmp/s4
APT_RETRY_PAUSE=1 sh "$top/scripts/apt-retry.sh" 2 "$tmp/fake-apt" 1000 "$lock" >/dev/null 2>"$tmp/err"
st=$?
ok $([ $st = 100 ] && grep -q 'stayed locked for 2s; giving up' "$tmp/err"; echo $?) \
    "a lock never released: gives up after the limit with apt's status (exit $st)"

ok $(grep -q 'apt-retry.sh" "$wait" $SUDO apt-get -o DPkg::Lock::Timeout="$wait" update' "$top/scripts/install-deps.sh" &&
     grep -q 'apt-retry.sh" "$wait" $SUDO env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout' \
         "$top/scripts/install-deps.sh"; echo $?) "install-deps.sh runs update and install through it"
echo "1..$n"
exit $failed
