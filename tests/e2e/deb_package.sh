#!/bin/sh
# deb_package.sh - the Debian package, built once and then used for every
# check: `dpkg-buildpackage -us -uc -b` (DEB_BUILD_OPTIONS=nocheck: this
# suite is the test) on a copy of the source tree, its contents (dpkg -c,
# dependencies: no BLAS), lintian without errors, `apt-get install ./*.deb`
# (system user, settings file, snippet, units enabled as dh does),
# `systemd-analyze verify` on the installed units, and the installed binary
# run as the service runs it - user llm-fcgi, the socket on fd 0 (mode 0660,
# group www-data, held by tests/tools/sock_activate in systemd's place: this
# machine runs no systemd), the settings of /etc/llm-fcgi/llm-fcgi.env, its
# default model pulled from a local hub double - behind nginx with the
# installed snippet (API and chat page). The package is purged at the end.
# Needs root (dpkg); the .deb is kept in tests/e2e/deb/ of the build
# directory. Emits TAP.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/hub_double.sh"

MODEL_FILE=${LLM_MODELS_DIR:-$TOP_SRCDIR/../shared/models}/stories260K.gguf
need dpkg-buildpackage dpkg-deb lintian apt-get systemd-analyze nginx curl node model
[ "$(id -u)" = 0 ] || bail "installing a package needs root"
ACT=$(dirname "$LLM_FCGI")/tests/tools/sock_activate
[ -x "$ACT" ] || bail "no sock_activate helper ($ACT)"
OUT=${DEB_OUT:-$PWD/tests/e2e/deb}
rm -rf "$OUT"; mkdir -p "$OUT"
version=$(sed -n '1s/^llm-fcgi (\([^)]*\)).*/\1/p' "$TOP_SRCDIR/debian/changelog")
[ "$version" = "$("$LLM_FCGI" --version | sed 's/^llm-fcgi //')" ]
ok $? "debian/changelog's version is configure's ($version)"

# ---- build (once)
src=$E2E_TMP/pkg/llm-fcgi-$version
mkdir -p "$src"
tar -C "$TOP_SRCDIR" --exclude='./build*' --exclude='./_build' --exclude=node_modules --exclude=./.git \
    --exclude=autom4te.cache --exclude='./llm-fcgi-*' -cf - . | tar -C "$src" -xf -
chmod -R u+w "$src"
(cd "$src" && DEB_BUILD_OPTIONS="nocheck parallel=$(nproc)" timeout 1800 dpkg-buildpackage -us -uc -b) \
    >"$OUT/build.log" 2>&1
st=$?
deb=$E2E_TMP/pkg/llm-fcgi_${version}_$(dpkg --print-architecture).deb
ok $([ $st = 0 ] && [ -f "$deb" ]; echo $?) "dpkg-buildpackage -us -uc -b builds $(basename "$deb") ($st)"
[ -f "$deb" ] || { tail -n 30 "$OUT/build.log" | sed 's/^/# /'; e2e_done; exit 1; }
cp "$E2E_TMP"/pkg/*.deb "$E2E_TMP"/pkg/*.changes "$E2E_TMP"/pkg/*.buildinfo "$OUT/" # lintian reads the whole upload
deb=$OUT/$(basename "$deb")

# ---- contents
dpkg -c "$deb" | awk '{print $6}' | sed 's|^\./|/|' >"$E2E_TMP/contents"
missing=
for f in /usr/bin/llm-fcgi /usr/share/man/man1/llm-fcgi.1.gz /etc/llm-fcgi/llm-fcgi.env \
         /etc/nginx/snippets/llm-fcgi.conf /etc/nginx/conf.d/llm-fcgi.conf \
         /lib/systemd/system/llm-fcgi.socket /lib/systemd/system/llm-fcgi.service \
         /lib/systemd/system/llm-fcgi@.socket /lib/systemd/system/llm-fcgi@.service \
         /usr/share/llm-fcgi/www/index.html /usr/share/llm-fcgi/www/chat.js /usr/share/llm-fcgi/www/chat.css \
         /usr/share/llm-fcgi/nginx/llm-fcgi.conf /usr/share/llm-fcgi/nginx/lighttpd-llm-fcgi.conf \
         /usr/share/doc/llm-fcgi/copyright; do
    grep -qx "$f" "$E2E_TMP/contents" || missing="$missing $f"
done
ok $([ -z "$missing" ]; echo $?) "dpkg -c: binary, man page, settings, snippet, upstream, units, page, examples${missing:+ (missing:$missing)}"
deps=$(dpkg-deb -f "$deb" Depends)
echo "$deps" | grep -q 'libcurl4' && echo "$deps" | grep -q 'libfcgi0ldbl' && echo "$deps" | grep -q 'libjs-marked' \
    && echo "$deps" | grep -q 'adduser' && ! echo "$deps" | grep -qi 'blas'
ok $? "Depends: libcurl4, libfcgi, libjs-marked, adduser; no BLAS ($deps)"
dpkg-deb --ctrl-tarfile "$deb" | tar -xOf - ./conffiles >"$E2E_TMP/conffiles"
grep -qx /etc/llm-fcgi/llm-fcgi.env "$E2E_TMP/conffiles" && grep -qx /etc/nginx/snippets/llm-fcgi.conf "$E2E_TMP/conffiles"
ok $? "the settings file and the snippet are conffiles"
timeout 600 lintian --fail-on error "$deb" "${deb%.deb}.changes" >"$OUT/lintian.log" 2>&1; st=$?
ok $st "lintian: no errors"
grep -E '^[EW]:' "$OUT/lintian.log" | sed 's/^/# /'

# ---- install
timeout 900 apt-get -o DPkg::Lock::Timeout=600 install -y -q --reinstall --no-install-recommends "$deb" \
    >"$OUT/install.log" 2>&1; st=$?
ok $st "apt-get install ./$(basename "$deb")"
[ $st = 0 ] || tail -n 20 "$OUT/install.log" | sed 's/^/# /'
cleanup_pkg() { apt-get -o DPkg::Lock::Timeout=600 purge -y -q llm-fcgi >"$OUT/purge.log" 2>&1; }
[ "$(/usr/bin/llm-fcgi --version)" = "llm-fcgi $version" ]; ok $? "/usr/bin/llm-fcgi --version"
getent passwd llm-fcgi | grep -q ':/var/lib/llm-fcgi:' && getent group llm-fcgi >/dev/null
ok $? "system user and group llm-fcgi (home /var/lib/llm-fcgi)"
[ -L /etc/systemd/system/sockets.target.wants/llm-fcgi.socket ] && [ ! -e /etc/systemd/system/multi-user.target.wants/llm-fcgi.service ]
ok $? "llm-fcgi.socket enabled, the service left to socket activation"
grep -q '^LLM_MODEL=' /etc/llm-fcgi/llm-fcgi.env; ok $? "/etc/llm-fcgi/llm-fcgi.env sets LLM_MODEL"
(cd /lib/systemd/system && SYSTEMD_LOG_LEVEL=notice timeout 60 systemd-analyze verify --man=no \
    llm-fcgi.socket llm-fcgi.service) >"$E2E_TMP/verify" 2>&1; st=$?
ok $([ $st = 0 ] && [ ! -s "$E2E_TMP/verify" ]; echo $?) "systemd-analyze verify on the installed units: clean"
sed 's/^/# /' "$E2E_TMP/verify"

# ---- run it as the service does
hub_add HuggingFaceTB/SmolLM2-135M-Instruct-GGUF smollm2-135m-instruct-q8_0.gguf "$MODEL_FILE"
hub_start || { ok 1 "hub double starts"; cleanup_pkg; e2e_done; exit 1; }
models=$E2E_TMP/var-lib/models
mkdir -p "$models" && chown -R llm-fcgi:llm-fcgi "$E2E_TMP/var-lib" && chmod 755 "$E2E_TMP"
SOCK=$E2E_TMP/llm-fcgi.sock
# the unit's environment: its Environment= and EnvironmentFile=, as systemd reads them
envs=$(grep -E '^[A-Z_]+=' /etc/llm-fcgi/llm-fcgi.env | tr '\n' ' ')
env -i PATH=/usr/bin:/bin $envs LLM_MODELS_DIR="$models" HF_ENDPOINT="$HF_ENDPOINT" \
    "$ACT" --fd0 --group www-data "$SOCK" \
    setpriv --reuid=llm-fcgi --regid=llm-fcgi --init-groups /usr/bin/llm-fcgi serve --threads 1 \
    >/dev/null 2>"$E2E_TMP/llm.log" &
LLM_PID=$!
E2E_PIDS="$E2E_PIDS $LLM_PID"
wait_until test -S "$SOCK"
[ "$(stat -c '%a %G' "$SOCK")" = "660 www-data" ]; ok $? "the socket: 0660, group www-data"
d=$E2E_TMP/site
mkdir -p "$d/tmp"
cp /etc/nginx/fastcgi_params "$d/"
sed "s|unix:/run/llm-fcgi/llm-fcgi.sock|unix:$SOCK|" /etc/nginx/conf.d/llm-fcgi.conf >"$d/upstream.conf"
PORT=$(free_port)
cat >"$d/nginx.conf" <<CONF
user www-data www-data;
worker_processes 1;
pid $d/nginx.pid;
error_log $d/error.log warn;
daemon off;
events { worker_connections 64; }
http {
    client_body_temp_path $d/tmp/body;
    proxy_temp_path $d/tmp/proxy;
    fastcgi_temp_path $d/tmp/fastcgi;
    uwsgi_temp_path $d/tmp/uwsgi;
    scgi_temp_path $d/tmp/scgi;
    include /etc/nginx/mime.types;
    include $d/upstream.conf;
    server {
        listen 127.0.0.1:$PORT;
        include /etc/nginx/snippets/llm-fcgi.conf;
    }
}
CONF
nginx -p "$d" -e "$d/error.log" -c "$d/nginx.conf" >"$d/out.log" 2>&1 &
NGINX_PID=$!
E2E_PIDS="$E2E_PIDS $NGINX_PID"
BASE=http://127.0.0.1:$PORT
up() { [ "$(curl -s -m 5 -o /dev/null -w '%{http_code}' "$BASE/health")" = 200 ]; }
wait_until up; st=$?
ok $st "nginx (workers www-data) with the installed snippet reaches the installed llm-fcgi"
[ $st = 0 ] || sed 's/^/# /' "$E2E_TMP/llm.log" "$d/error.log"
grep -q 'model HuggingFaceTB/SmolLM2-135M-Instruct-GGUF:Q8_0 is .*/smollm2-135m-instruct-q8_0.gguf' "$E2E_TMP/llm.log" \
    && [ "$(stat -c %U "$models/HuggingFaceTB/SmolLM2-135M-Instruct-GGUF/smollm2-135m-instruct-q8_0.gguf")" = llm-fcgi ]
ok $? "the default LLM_MODEL was pulled by the user llm-fcgi into its model directory"
grep -q 'on fd 0' "$E2E_TMP/llm.log"; ok $? "the installed binary serves the socket on fd 0"
code=$(c -o "$E2E_TMP/chat" -w '%{http_code}' "$BASE/v1/chat/completions" -H 'Content-Type: application/json' \
    -d '{"messages":[{"role":"user","content":"Hello"}],"max_tokens":8}')
ok $([ "$code" = 200 ] && grep -q '"chat.completion"' "$E2E_TMP/chat"; echo $?) "a chat completion through the installed snippet ($code)"
code=$(c -o "$E2E_TMP/page" -w '%{http_code} %{content_type}' "$BASE/")
ok $([ "$code" = "200 text/html" ] && grep -q 'ui/chat.js' "$E2E_TMP/page"; echo $?) "the installed chat page at / ($code)"
[ "$(c -o /dev/null -w '%{http_code}' "$BASE/ui/marked.min.js")" = 200 ]; ok $? "libjs-marked through the snippet"
stop_server
ok $([ "$LLM_STATUS" = 0 ]; echo $?) "SIGTERM: the installed binary stops cleanly ($LLM_STATUS)"

# ---- purge
cleanup_pkg; st=$?
ok $([ $st = 0 ] && [ ! -e /usr/bin/llm-fcgi ] && [ ! -e /etc/llm-fcgi/llm-fcgi.env ]; echo $?) "apt-get purge removes it"
diag "package and logs: $OUT"
e2e_done
