#!/bin/sh
# nginx_conf.sh - the shipped production site (nginx/llm-fcgi.conf) passes
# `nginx -t`, both as shipped (llm-fcgi checks keys) and with the nginx-side
# key check (the map on $http_authorization) switched on. Paths that need
# root (certificates, /var/log) are redirected into a temp dir. Emits TAP.
. "$(dirname "$0")/lib.sh"

need nginx
command -v openssl >/dev/null || bail "openssl not installed (needed for a test certificate)"
d=$E2E_TMP
mkdir -p "$d/tmp"
timeout 60 openssl req -x509 -newkey rsa:2048 -nodes -keyout "$d/k.pem" -out "$d/c.pem" -days 1 -subj /CN=test \
    >/dev/null 2>&1 || bail "openssl cannot make a test certificate"
site=$TOP_SRCDIR/nginx/llm-fcgi.conf
localize() {
    sed -e "s|/etc/letsencrypt/live/llm.example.com/fullchain.pem|$d/c.pem|" \
        -e "s|/etc/letsencrypt/live/llm.example.com/privkey.pem|$d/k.pem|" \
        -e "s|/var/log/nginx/|$d/|" "$@"
}
main_conf() {
    cat <<CONF
pid $d/nginx.pid;
error_log $d/error.log;
events {}
http { client_body_temp_path $d/tmp; include $1; }
CONF
}
localize "$site" >"$d/site1.conf"
main_conf "$d/site1.conf" >"$d/nginx1.conf"
timeout 30 nginx -t -p "$d" -e "$d/error.log" -c "$d/nginx1.conf" >"$d/t1" 2>&1
ok $? "production site as shipped passes nginx -t"
grep -q 'fastcgi_buffering off' "$site" && grep -q 'fastcgi_read_timeout' "$site" && grep -q 'client_max_body_size' "$site" \
    && grep -q '^upstream llm_fcgi' "$site" && grep -q 'listen 443 ssl' "$site"
ok $? "site has TLS, upstream, buffering off, read timeout, body limit"
grep -q '^ *fastcgi_keep_conn on' "$site" || grep -q '^ *keepalive ' "$site"
ok $([ $? -ne 0 ]; echo $?) "site leaves fastcgi_keep_conn off"

# switch the nginx-side auth on: uncomment the map and the if block
localize "$site" | sed -e 's|^# map |map |' -e 's|^#     "Bearer|    "Bearer|' -e 's|^#     default|    default|' \
    -e 's|^# }|}|' -e 's|^        # if (\$llm_key_ok = 0) {.*|        if ($llm_key_ok = 0) {|' \
    -e 's|^        #     add_header|            add_header|' -e 's|^        #     return 401|            return 401|' \
    -e 's|^        # }|        }|' >"$d/site2.conf"
grep -q '^map \$http_authorization' "$d/site2.conf" && grep -q '^        if (\$llm_key_ok = 0)' "$d/site2.conf"
ok $? "nginx-side auth variant is switched on by uncommenting"
main_conf "$d/site2.conf" >"$d/nginx2.conf"
timeout 30 nginx -t -p "$d" -e "$d/error.log" -c "$d/nginx2.conf" >"$d/t2" 2>&1
st=$?
ok $st "production site with nginx-side key check passes nginx -t"
[ $st = 0 ] || sed 's/^/# /' "$d/t2"
e2e_done
