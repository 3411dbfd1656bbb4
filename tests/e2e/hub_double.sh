# hub_double.sh - a local stand-in for the Hugging Face hub, served by nginx
# in the hub's URL layout, for tests of `llm-fcgi pull` (sourced after
# lib.sh; there is no network in the tests):
#
#   GET /api/models/OWNER/NAME/tree/main   the repository listing (JSON:
#                                          type, path, size, lfs {oid, size})
#   GET /OWNER/NAME/resolve/main/FILE      302 to /cdn/OWNER/NAME/FILE with
#                                          X-Linked-Etag: "SHA-256" and
#                                          X-Linked-Size, as the hub does
#                                          for LFS files
#   GET /cdn/...                           the bytes (nginx: Range, 206);
#                                          repositories of the owner "slow"
#                                          trickle at 64 kB/s unless the
#                                          request is a resume (Range)
#
#   hub_add OWNER/NAME FILE SOURCE [LISTED_SHA]  add a file (LISTED_SHA: the
#                        digest the listing and X-Linked-Etag claim, default
#                        the real one; "none": no LFS entry, no etag)
#   hub_start            start nginx; sets HUB and exports HF_ENDPOINT

HUB_DIR=$E2E_TMP/hub
mkdir -p "$HUB_DIR/www/api/models" "$HUB_DIR/www/cdn" "$HUB_DIR/tmp" "$HUB_DIR/lists"
: >"$HUB_DIR/etags.map"
: >"$HUB_DIR/sizes.map"

hub_add() {
    repo=$1 file=$2 src=$3
    mkdir -p "$HUB_DIR/www/cdn/$repo"
    cp "$src" "$HUB_DIR/www/cdn/$repo/$file"
    size=$(stat -c %s "$src")
    sha=${4:-$(sha256sum "$src" | cut -d' ' -f1)}
    list=$HUB_DIR/lists/$(echo "$repo" | tr / _)
    [ -f "$list" ] || printf '%s\n' "$repo" >"$list"
    if [ "$sha" = none ]; then
        printf '{"type":"file","oid":"0000","size":%s,"path":"%s"}\n' "$size" "$file" >>"$list"
    else
        printf '{"type":"file","oid":"0000","size":%s,"path":"%s","lfs":{"oid":"%s","size":%s,"pointerSize":134}}\n' \
            "$size" "$file" "$sha" "$size" >>"$list"
        printf '    /%s/resolve/main/%s "\\"%s\\"";\n' "$repo" "$file" "$sha" >>"$HUB_DIR/etags.map"
    fi
    printf '    /%s/resolve/main/%s %s;\n' "$repo" "$file" "$size" >>"$HUB_DIR/sizes.map"
}

hub_start() {
    for list in "$HUB_DIR"/lists/*; do
        [ -f "$list" ] || continue
        repo=$(head -n 1 "$list")
        mkdir -p "$HUB_DIR/www/api/models/$repo/tree"
        { printf '[{"type":"file","oid":"1111","size":30,"path":"README.md"},'
          printf '{"type":"file","oid":"2222","size":1519,"path":".gitattributes"}'
          tail -n +2 "$list" | sed 's/^/,/'
          printf ']'; } >"$HUB_DIR/www/api/models/$repo/tree/main"
    done
    HUB_PORT=$(free_port)
    cat >"$HUB_DIR/nginx.conf" <<CONF
worker_processes 1;
user $(id -un) $(id -gn);
pid $HUB_DIR/nginx.pid;
error_log $HUB_DIR/error.log warn;
daemon off;
events { worker_connections 64; }
http {
    access_log $HUB_DIR/access.log;
    client_body_temp_path $HUB_DIR/tmp/body;
    proxy_temp_path $HUB_DIR/tmp/proxy;
    fastcgi_temp_path $HUB_DIR/tmp/fastcgi;
    uwsgi_temp_path $HUB_DIR/tmp/uwsgi;
    scgi_temp_path $HUB_DIR/tmp/scgi;
    default_type application/octet-stream;
    map_hash_bucket_size 256;
    map \$uri \$linked_etag {
        default "";
        include $HUB_DIR/etags.map;
    }
    map \$uri \$linked_size {
        default "";
        include $HUB_DIR/sizes.map;
    }
    map "\$http_range|\$uri" \$hub_rate {
        "~^\\|/cdn/slow/" 64k;
        default 0;
    }
    server {
        listen 127.0.0.1:$HUB_PORT;
        root $HUB_DIR/www;
        location /api/ { default_type application/json; }
        location ~ ^/(?<repo>[^/]+/[^/]+)/resolve/main/(?<file>.+)\$ {
            add_header X-Linked-Etag \$linked_etag always;
            add_header X-Linked-Size \$linked_size always;
            add_header X-Repo-Commit 9f1d8a2c0e7b4a6d5c3b2a1f0e9d8c7b6a5f4e3d always;
            return 302 /cdn/\$repo/\$file;
        }
        location /cdn/ { limit_rate \$hub_rate; }
    }
}
CONF
    nginx -p "$HUB_DIR" -e "$HUB_DIR/error.log" -c "$HUB_DIR/nginx.conf" >"$HUB_DIR/out.log" 2>&1 &
    HUB_PID=$!
    E2E_PIDS="$E2E_PIDS $HUB_PID"
    HUB=http://127.0.0.1:$HUB_PORT
    HF_ENDPOINT=$HUB
    export HF_ENDPOINT
    i=0
    while [ "$(curl -s -m 2 -o /dev/null -w '%{http_code}' "$HUB/api/")" = 000 ] && [ $i -lt 300 ]; do
        sleep 0.1; i=$((i + 1))
    done
    [ "$(curl -s -m 2 -o /dev/null -w '%{http_code}' "$HUB/api/")" != 000 ] ||
        { diag "hub double did not start:"; sed 's/^/# /' "$HUB_DIR/error.log" "$HUB_DIR/out.log"; return 1; }
}
