#!/bin/sh
# apt-retry.sh SECONDS CMD [ARG...]: runs CMD (an apt-get command); while
# it fails because another process holds a package-manager lock ("Could not
# get lock ..."), says who holds it, waits 5 s and runs it again, for at
# most SECONDS in all. Exits with CMD's status: at once for any failure
# other than a held lock, and after SECONDS if the lock is never released.
# Used by install-deps.sh: a fresh cloud VM often runs unattended upgrades
# at boot, and `apt-get update` (its lists lock) does not wait by itself.
limit=$1; shift
pause=${APT_RETRY_PAUSE:-5}
start=$(date +%s)
log=$(mktemp "${TMPDIR:-/tmp}/apt-retry.XXXXXX")
trap 'rm -f "$log"' EXIT
while :; do
    "$@" 2>"$log"
    st=$?
    cat "$log" >&2
    [ $st = 0 ] && exit 0
    grep -qE 'Could not get lock|Unable to lock|Unable to acquire the dpkg frontend lock' "$log" || exit $st
    if [ $(( $(date +%s) - start )) -ge "$limit" ]; then
        echo "apt-retry: the package manager stayed locked for ${limit}s; giving up" >&2
        exit $st
    fi
    holder=$(grep -oE 'held by process [0-9]+( \([^)]*\))?' "$log" | head -n 1)
    echo "apt-retry: waiting for the package manager's lock${holder:+ ($holder)}..." >&2
    sleep "$pause"
done
