#!/bin/sh
# nginx_conf.sh - the shipped nginx files pass `nginx -t`: the production
# site (nginx/llm-fcgi.conf) with the snippet (llm-fcgi-snippet.conf.in, as
# installed in /etc/nginx/snippets/) and the upstream (llm-fcgi-upstream.conf,
# /etc/nginx/conf.d/), both as shipped (llm-fcgi checks keys) and with the
# nginx-side key check switched on in the upstream file; the snippet alone in
# a plain server block, as an operator includes it. Paths that need root
# (certificates, /var/log) are redirected into a temp dir. (The same files
# serve real traffic in chat_page.sh.) Emits TAP.
. "$(dirname "$0")/lib.sh"

need nginx
command -v openssl >/dev/null || bail "openssl not installed (needed for a test certificate)"
d=$E2E_TMP
mkdir -p "$d/tmp" "$d/snippets"
timeout 60 openssl req -x509 -newkey rsa:2048 -nodes -keyout "$d/k.pem" -out "$d/c.pem" -days 1 -subj /CN=test \
    >/dev/null 2>&1 || bail "openssl cannot make a test certificate"
site=$TOP_SRCDIR/nginx/llm-fcgi.conf
snippet_in=$TOP_SRCDIR/nginx/llm-fcgi-snippet.conf.in
upstream=$TOP_SRCDIR/nginx/llm-fcgi-upstream.conf
cp /etc/nginx/fastcgi_params "$d/fastcgi_params"
sed -e "s|@WWWDIR@|$TOP_SRCDIR/www|g" -e "s|@MARKEDDIR@|/usr/share/javascript/marked|g" "$snippet_in" \
    >"$d/snippets/llm-fcgi.conf"
sed -e "s|/etc/letsencrypt/live/llm.example.com/fullchain.pem|$d/c.pem|" \
    -e "s|/etc/letsencrypt/live/llm.example.com/privkey.pem|$d/k.pem|" \
    -e "s|/var/log/nginx/|$d/|" "$site" >"$d/site.conf"
main_conf() { # main_conf UPSTREAM_FILE SERVER_FILE
    cat <<CONF
pid $d/nginx.pid;
error_log $d/error.log;
events {}
http { client_body_temp_path $d/tmp; include $1; include $2; }
CONF
}
nginx_t() { timeout 30 nginx -t -p "$d" -e "$d/error.log" -c "$1" >"$1.out" 2>&1; st=$?; [ $st = 0 ] || sed 's/^/# /' "$1.out"; return $st; }

main_conf "$upstream" "$d/site.conf" >"$d/nginx1.conf"
nginx_t "$d/nginx1.conf"; ok $? "production site + snippet + upstream as shipped pass nginx -t"
grep -q 'fastcgi_buffering off' "$snippet_in" && grep -q 'fastcgi_read_timeout' "$snippet_in" \
    && grep -q 'client_max_body_size' "$site" && grep -q '^upstream llm_fcgi' "$upstream" \
    && grep -q 'listen 443 ssl' "$site" && grep -q 'include snippets/llm-fcgi.conf;' "$site"
ok $? "TLS site includes the snippet; upstream, buffering off, read timeout, body limit"
grep -q '^ *fastcgi_keep_conn on' "$snippet_in" "$upstream" "$site" || grep -q '^ *keepalive ' "$upstream"
ok $([ $? -ne 0 ]; echo $?) "fastcgi_keep_conn and upstream keepalive stay off"
grep -q 'location = / ' "$snippet_in" && grep -q 'alias @MARKEDDIR@/marked.min.js' "$snippet_in"
ok $? "the snippet serves the chat page at / and Debian's marked"

# nginx-side keys: default 1 in the map, keys listed with 0
sed -e 's|^    default 0;|    default 1;|' -e 's|^    # "Bearer sk-replace-me-1" 0;|    "Bearer sk-replace-me-1" 0;|' \
    "$upstream" >"$d/upstream2.conf"
grep -q '^    default 1;' "$d/upstream2.conf" && grep -q '^    "Bearer sk-replace-me-1" 0;' "$d/upstream2.conf"
ok $? "nginx-side key check is switched on by editing the map"
main_conf "$d/upstream2.conf" "$d/site.conf" >"$d/nginx2.conf"
nginx_t "$d/nginx2.conf"; ok $? "with the nginx-side key check: nginx -t passes"

# the snippet in an operator's own plain server block
cat >"$d/plain.conf" <<CONF
server {
    listen 127.0.0.1:8089;
    root /var/www/html;
    include snippets/llm-fcgi.conf;
}
CONF
main_conf "$upstream" "$d/plain.conf" >"$d/nginx3.conf"
nginx_t "$d/nginx3.conf"; ok $? "the snippet in a plain server block passes nginx -t"
e2e_done
