#!/bin/sh
# units.sh - the systemd units as built (systemd/*.in with this build's
# paths): `systemd-analyze verify` finds nothing to report, the socket is
# 0660 www-data and handed over as fd 0, the service is hardened and
# restarts on failure, the template derives its socket and settings file
# from the instance name. Units that name the installed binary are checked
# with ExecStart pointed at this build's binary (verify wants the file to
# exist). Emits TAP.
. "$(dirname "$0")/lib.sh"
need systemd-analyze binary
B=$(dirname "$LLM_FCGI")
u=$E2E_TMP/units
mkdir -p "$u"
for f in llm-fcgi.socket llm-fcgi.service llm-fcgi@.socket llm-fcgi@.service; do
    [ -f "$B/systemd/$f" ] || bail "systemd/$f was not built"
    sed "s|^ExecStart=[^ ]*/llm-fcgi |ExecStart=$LLM_FCGI |" "$B/systemd/$f" >"$u/$f"
done
# the instance name of the template must be given to verify
cp "$u/llm-fcgi@.socket" "$u/llm-fcgi@second.socket"
cp "$u/llm-fcgi@.service" "$u/llm-fcgi@second.service"
# www-data and llm-fcgi may not exist on a build machine: verify does not
# resolve users; it does read the EnvironmentFile only at start
( cd "$u" && SYSTEMD_LOG_LEVEL=notice timeout 60 systemd-analyze verify --man=no \
    ./llm-fcgi.socket ./llm-fcgi.service ./llm-fcgi@second.socket ./llm-fcgi@second.service ) >"$E2E_TMP/verify" 2>&1
st=$?
ok $([ $st = 0 ] && [ ! -s "$E2E_TMP/verify" ]; echo $?) "systemd-analyze verify: clean ($st)"
[ -s "$E2E_TMP/verify" ] && sed 's/^/# /' "$E2E_TMP/verify"
s=$B/systemd/llm-fcgi.socket; v=$B/systemd/llm-fcgi.service
grep -q '^ListenStream=/run/llm-fcgi/llm-fcgi.sock$' "$s" && grep -q '^SocketMode=0660$' "$s" && grep -q '^SocketGroup=www-data$' "$s"
ok $? "socket: /run/llm-fcgi/llm-fcgi.sock, mode 0660, group www-data"
grep -q '^StandardInput=socket$' "$v" && grep -q '^StandardOutput=journal$' "$v" && grep -q '^Requires=llm-fcgi.socket$' "$v"
ok $? "service: the socket on fd 0 (StandardInput=socket), output to the journal"
grep -q '^ExecStart=/[^ ]*/bin/llm-fcgi serve$' "$v"
ok $? "service: ExecStart is the installed binary by its absolute path"
for k in Restart=on-failure NoNewPrivileges=yes ProtectSystem=strict PrivateTmp=yes ProtectHome=yes User=llm-fcgi \
         StateDirectory=llm-fcgi 'CapabilityBoundingSet='; do
    grep -q "^$k\$" "$v"; ok $? "service: $k"
done
grep -q '^ListenStream=/run/llm-fcgi/%i.sock$' "$B/systemd/llm-fcgi@.socket" && grep -q '^EnvironmentFile=.*/llm-fcgi/%i.env$' "$B/systemd/llm-fcgi@.service" \
    && grep -q '^Requires=llm-fcgi@%i.socket$' "$B/systemd/llm-fcgi@.service"
ok $? "template: socket /run/llm-fcgi/NAME.sock, settings NAME.env, its own socket unit"
e2e_done
