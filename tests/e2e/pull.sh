#!/bin/sh
# pull.sh - `llm-fcgi pull` and `serve -m OWNER/NAME:QUANT` against a local
# hub double (tests/e2e/hub_double.sh: nginx in the hub's URL layout, with
# its listing, redirects, X-Linked-Etag and ranges): the download with its
# progress, the digest check, the file found again offline, a transfer
# interrupted and resumed, a checksum mismatch and a non-GGUF file refused
# (nothing left behind), an unwritable directory, a full disk, an
# unreachable hub, unknown repositories and quantizations; a vision
# repository's projector pulled beside its model (the F16 one), found again
# offline, left out with --no-mmproj, and a broken projector refused.
# Emits TAP.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/hub_double.sh"

MODEL_FILE=${LLM_MODELS_DIR:-$TOP_SRCDIR/../shared/models}/stories260K.gguf
need nginx node curl model binary sha256sum script unshare
L=$LLM_FCGI
SHA=$(sha256sum "$MODEL_FILE" | cut -d' ' -f1)
SIZE=$(stat -c %s "$MODEL_FILE")
printf '<!doctype html><title>Not a model</title>\n' >"$E2E_TMP/page.html"
head -c 300000 /dev/urandom >"$E2E_TMP/noise.bin"

hub_add test-org/stories-GGUF stories260K-Q8_0.gguf "$MODEL_FILE"
hub_add test-org/stories-GGUF stories260K-F16.gguf "$MODEL_FILE"
MODELS=${LLM_MODELS_DIR:-$TOP_SRCDIR/../shared/models}
hub_add test-org/tinygemma3v-GGUF tinygemma3v-Q8_0.gguf "$MODELS/tinygemma3v-q8_0.gguf"
hub_add test-org/tinygemma3v-GGUF mmproj-tinygemma3v-Q8_0.gguf "$E2E_TMP/noise.bin" # never chosen: F16 is there
hub_add test-org/tinygemma3v-GGUF mmproj-tinygemma3v-F16.gguf "$MODELS/mmproj-tinygemma3v-f16.gguf"
hub_add test-org/tinygemma3v-GGUF mmproj-tinygemma3v-F32.gguf "$MODELS/mmproj-tinygemma3v-f32.gguf"
hub_add bad-org/badproj-GGUF model-Q8_0.gguf "$MODEL_FILE"
hub_add bad-org/badproj-GGUF mmproj-model-F16.gguf "$E2E_TMP/noise.bin"
MMSHA=$(sha256sum "$MODELS/mmproj-tinygemma3v-f16.gguf" | cut -d' ' -f1)
hub_add slow/stories-GGUF stories260K-Q8_0.gguf "$MODEL_FILE"
hub_add bad-org/wrong-sum-GGUF model-Q8_0.gguf "$MODEL_FILE" 0000000000000000000000000000000000000000000000000000000000000000
hub_add bad-org/html-GGUF model-Q8_0.gguf "$E2E_TMP/page.html"
hub_add bad-org/nosum-GGUF model-Q8_0.gguf "$E2E_TMP/noise.bin" none
hub_add big-org/model-GGUF model-Q8_0.gguf "$E2E_TMP/noise.bin"
hub_start || { ok 1 "hub double starts"; e2e_done; exit 1; }
export LLM_MODELS_DIR="$E2E_TMP/models"
unset HF_TOKEN

# ---- a pull, and the same pull again
"$L" pull test-org/stories-GGUF:Q8_0 >"$E2E_TMP/p1.out" 2>"$E2E_TMP/p1.err"; st=$?
want=$LLM_MODELS_DIR/test-org/stories-GGUF/stories260K-Q8_0.gguf
ok $([ $st = 0 ] && [ "$(cat "$E2E_TMP/p1.out")" = "$want" ]; echo $?) "pull OWNER/NAME:Q8_0 prints the path ($st)"
[ "$(sha256sum "$want" 2>/dev/null | cut -d' ' -f1)" = "$SHA" ]; ok $? "the file is the hub's, byte for byte"
grep -q 'pull: 100%' "$E2E_TMP/p1.err" && grep -q 'SHA-256 verified, GGUF checked' "$E2E_TMP/p1.err"
ok $? "progress lines (not a terminal) end at 100%; digest and GGUF checked"
[ -z "$(find "$LLM_MODELS_DIR" -name '*.part')" ]; ok $? "no .part left after a complete download"
"$L" pull test-org/stories-GGUF:Q8_0 >"$E2E_TMP/p2.out" 2>"$E2E_TMP/p2.err"; st=$?
ok $([ $st = 0 ] && grep -q 'already there' "$E2E_TMP/p2.err" && [ "$(cat "$E2E_TMP/p2.out")" = "$want" ]; echo $?) \
    "the same pull again finds the file, downloads nothing"
n=$(grep -c 'resolve/main/stories260K-Q8_0.gguf' "$HUB_DIR/access.log")
ok $([ "$n" = 1 ]; echo $?) "the hub was asked for the file once ($n)"
HF_ENDPOINT=http://127.0.0.1:1 "$L" pull -q test-org/stories-GGUF:q8_0 >/dev/null 2>&1
ok $? "found offline, quantization matched case-insensitively"
"$L" pull test-org/stories-GGUF:F16 >/dev/null 2>&1 && [ -f "$LLM_MODELS_DIR/test-org/stories-GGUF/stories260K-F16.gguf" ]
ok $? "another quantization of the same repository"

# ---- a vision repository: the projector comes with the model
"$L" pull test-org/tinygemma3v-GGUF:Q8_0 >"$E2E_TMP/v1.out" 2>"$E2E_TMP/v1.err"; st=$?
vdir=$LLM_MODELS_DIR/test-org/tinygemma3v-GGUF
ok $([ $st = 0 ] && [ "$(sed -n 1p "$E2E_TMP/v1.out")" = "$vdir/tinygemma3v-Q8_0.gguf" ] &&
     [ "$(sed -n 2p "$E2E_TMP/v1.out")" = "$vdir/mmproj-tinygemma3v-F16.gguf" ] && [ "$(wc -l <"$E2E_TMP/v1.out")" = 2 ]; echo $?) \
    "pull of a vision repository prints the model's path, then its projector's (the F16 one) ($st)"
[ "$(sha256sum "$vdir/mmproj-tinygemma3v-F16.gguf" 2>/dev/null | cut -d' ' -f1)" = "$MMSHA" ] &&
    [ "$(grep -c 'SHA-256 verified, GGUF checked' "$E2E_TMP/v1.err")" = 2 ]
ok $? "the projector is the hub's, digest verified and GGUF checked like the model"
! grep -q 'mmproj-tinygemma3v-Q8_0\|mmproj-tinygemma3v-F32' "$HUB_DIR/access.log" && [ "$(ls "$vdir" | wc -l)" = 2 ]
ok $? "the other projectors (Q8_0, F32) were never downloaded"
"$L" pull test-org/tinygemma3v-GGUF:Q8_0 >"$E2E_TMP/v2.out" 2>"$E2E_TMP/v2.err"; st=$?
ok $([ $st = 0 ] && cmp -s "$E2E_TMP/v1.out" "$E2E_TMP/v2.out" && grep -q 'already there: .*Q8_0.gguf, .*F16.gguf' "$E2E_TMP/v2.err" &&
     [ "$(grep -c 'resolve/main/.*tinygemma3v' "$HUB_DIR/access.log")" = 2 ]; echo $?) \
    "the same pull again: both found, nothing downloaded"
HF_ENDPOINT=http://127.0.0.1:1 "$L" pull -q test-org/tinygemma3v-GGUF:Q8_0 >"$E2E_TMP/v3.out" 2>/dev/null; st=$?
ok $([ $st = 0 ] && cmp -s "$E2E_TMP/v1.out" "$E2E_TMP/v3.out"; echo $?) "offline: model and projector found again"
"$L" pull -q --no-mmproj test-org/tinygemma3v-GGUF:Q8_0 >"$E2E_TMP/v4.out" 2>/dev/null; st=$?
ok $([ $st = 0 ] && [ "$(cat "$E2E_TMP/v4.out")" = "$vdir/tinygemma3v-Q8_0.gguf" ]; echo $?) "--no-mmproj: the model's path only"
rm -f "$vdir/mmproj-tinygemma3v-F16.gguf"
"$L" pull -q test-org/tinygemma3v-GGUF:Q8_0 >"$E2E_TMP/v5.out" 2>/dev/null; st=$?
ok $([ $st = 0 ] && cmp -s "$E2E_TMP/v1.out" "$E2E_TMP/v5.out"; echo $?) \
    "a model already there whose projector is missing: the projector is fetched"
HF_ENDPOINT=http://127.0.0.1:1 "$L" pull test-org/stories-GGUF:Q8_0 >"$E2E_TMP/v6.out" 2>"$E2E_TMP/v6.err"; st=$?
ok $([ $st = 0 ] && [ "$(cat "$E2E_TMP/v6.out")" = "$want" ] && grep -q 'not checked for a projector' "$E2E_TMP/v6.err"; echo $?) \
    "a text model already there, hub unreachable: served as it is, says the projector was not checked"
"$L" pull bad-org/badproj-GGUF:Q8_0 >"$E2E_TMP/bp.out" 2>"$E2E_TMP/bp.err"; st=$?
ok $([ $st = 1 ] && grep -q 'projector (mmproj) mmproj-model-F16.gguf of bad-org/badproj-GGUF.*not a GGUF' "$E2E_TMP/bp.err" &&
     grep -q 'the model itself is there .*--no-mmproj' "$E2E_TMP/bp.err" && [ ! -s "$E2E_TMP/bp.out" ]; echo $?) \
    "a broken projector: exit 1, names it, says the model is there and how to pull it alone"
sed 's/^/# /' "$E2E_TMP/bp.err" | tail -n 2
[ ! -e "$LLM_MODELS_DIR/bad-org/badproj-GGUF/mmproj-model-F16.gguf" ] &&
    [ -z "$(find "$LLM_MODELS_DIR/bad-org/badproj-GGUF" -name '*.part')" ]; ok $? "the broken projector left nothing behind"
"$L" pull -q --no-mmproj bad-org/badproj-GGUF:Q8_0 >/dev/null 2>&1; ok $? "--no-mmproj pulls its model alone"

# ---- serve -m a vision repository uses its projector, as llama-server's -hf
TMPL=$TOP_SRCDIR/tests/e2e/vision_template.jinja
IMG=$(base64 -w0 "${LLM_GOLDEN_DIR:-$TOP_SRCDIR/../shared/golden}/vision/images/v01_png_rgb_224x224.png")
printf '{"messages":[{"role":"user","content":[{"type":"text","text":"What is it?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,%s"}}]}],"max_tokens":4}' \
    "$IMG" >"$E2E_TMP/img.json"
rm -f "$vdir/mmproj-tinygemma3v-F16.gguf"
start_server "$L" serve -m test-org/tinygemma3v-GGUF:Q8_0 --threads 1 --chat-template "$TMPL" --ctx-size 1024
ok $? "serve -m a vision repository starts"
grep -q "vision projector $vdir/mmproj-tinygemma3v-F16.gguf" "$E2E_TMP/llm.log" && [ -f "$vdir/mmproj-tinygemma3v-F16.gguf" ]
ok $? "serve pulls the missing projector and says it serves it"
code=$(c -o "$E2E_TMP/simg.json" -w '%{http_code}' "$BASE/v1/chat/completions" -H 'Content-Type: application/json' \
    --data-binary @"$E2E_TMP/img.json")
ok $([ "$code" = 200 ]; echo $?) "an image in a chat message is answered ($code)"
stop_server
start_server "$L" serve -m test-org/tinygemma3v-GGUF:Q8_0 --no-mmproj --threads 1 --chat-template "$TMPL" --ctx-size 1024
code=$(c -o "$E2E_TMP/simg2.json" -w '%{http_code}' "$BASE/v1/chat/completions" -H 'Content-Type: application/json' \
    --data-binary @"$E2E_TMP/img.json")
ok $([ "$code" = 400 ] && ! grep -q 'vision projector' "$E2E_TMP/llm.log"; echo $?) "serve --no-mmproj: text only, an image is a 400 ($code)"
stop_server

# ---- a terminal gets a bar redrawn in place
TERM=dumb script -qec "'$L' pull --force test-org/stories-GGUF:Q8_0" /dev/null >"$E2E_TMP/tty.out" 2>&1
grep -q '100% \[##############################\]' "$E2E_TMP/tty.out" && grep -q "$(printf '\r')" "$E2E_TMP/tty.out"
ok $? "on a terminal: a progress bar redrawn with carriage returns"

# ---- serve pulls a missing model, then serves it
rm -rf "$LLM_MODELS_DIR/test-org"
start_server "$L" serve -m test-org/stories-GGUF:Q8_0 --threads 1; st=$?
ok $st "serve -m OWNER/NAME:Q8_0 pulls the missing model and starts"
[ -f "$want" ] && grep -q "model test-org/stories-GGUF:Q8_0 is $want" "$E2E_TMP/llm.log"; ok $? "serve logs which file it loaded"
c "$BASE/v1/models" | grep -q '"id":"test-org/stories-GGUF:Q8_0"'; ok $? "/v1/models names the model as given"
code=$(c -o /dev/null -w '%{http_code}' "$BASE/v1/completions" -H 'Content-Type: application/json' \
    -d '{"prompt":"Once","max_tokens":4}')
ok $([ "$code" = 200 ]; echo $?) "the pulled model answers a completion ($code)"
stop_server

# ---- an interrupted transfer is resumed
"$L" pull slow/stories-GGUF:Q8_0 >/dev/null 2>"$E2E_TMP/slow.err" &
PULL_PID=$!
E2E_PIDS="$E2E_PIDS $PULL_PID"
part=$LLM_MODELS_DIR/slow/stories-GGUF/stories260K-Q8_0.gguf.part
big_enough() { [ "$(stat -c %s "$part" 2>/dev/null || echo 0)" -ge 150000 ]; }
wait_until big_enough
kill -TERM "$PULL_PID"; wait "$PULL_PID" 2>/dev/null
have=$(stat -c %s "$part" 2>/dev/null || echo 0)
ok $([ "$have" -gt 0 ] && [ "$have" -lt "$SIZE" ] && [ ! -f "${part%.part}" ]; echo $?) \
    "an interrupted pull leaves a partial .part ($have of $SIZE bytes), no model file"
"$L" pull slow/stories-GGUF:Q8_0 >/dev/null 2>"$E2E_TMP/resume.err"; st=$?
ok $([ $st = 0 ] && grep -q "resuming .* after $have bytes" "$E2E_TMP/resume.err"; echo $?) "the next pull resumes after $have bytes"
[ "$(sha256sum "${part%.part}" | cut -d' ' -f1)" = "$SHA" ] && grep -q 'SHA-256 verified' "$E2E_TMP/resume.err"
ok $? "the resumed file is whole and passes the digest"
grep 'cdn/slow/' "$HUB_DIR/access.log" | tail -n 1 | grep -q '" 206 '; ok $? "the hub answered the resume with 206 Partial Content"

# ---- refused downloads leave nothing behind
"$L" pull bad-org/wrong-sum-GGUF:Q8_0 >/dev/null 2>"$E2E_TMP/sum.err"; st=$?
ok $([ $st = 1 ] && grep -q 'checksum mismatch' "$E2E_TMP/sum.err"; echo $?) "checksum mismatch refused, exit 1 ($st)"
[ -z "$(ls -A "$LLM_MODELS_DIR/bad-org/wrong-sum-GGUF" 2>/dev/null)" ]; ok $? "mismatch: no file and no .part left"
"$L" pull bad-org/html-GGUF:Q8_0 >/dev/null 2>"$E2E_TMP/html.err"; st=$?
ok $([ $st = 1 ] && grep -q 'is not a GGUF model file' "$E2E_TMP/html.err"; echo $?) "a non-GGUF file (digest right) is refused ($st)"
[ -z "$(ls -A "$LLM_MODELS_DIR/bad-org/html-GGUF" 2>/dev/null)" ]; ok $? "non-GGUF: nothing left"
"$L" pull bad-org/nosum-GGUF:Q8_0 >/dev/null 2>"$E2E_TMP/nosum.err"; st=$?
ok $([ $st = 1 ] && grep -q 'is not a GGUF model file' "$E2E_TMP/nosum.err"; echo $?) "random bytes without a digest: refused as non-GGUF"
# a URL: the digest comes from X-Linked-Etag
"$L" pull "$HUB/bad-org/wrong-sum-GGUF/resolve/main/model-Q8_0.gguf" >/dev/null 2>"$E2E_TMP/url1.err"; st=$?
ok $([ $st = 1 ] && grep -q 'checksum mismatch' "$E2E_TMP/url1.err"; echo $?) "pull URL checks the X-Linked-Etag digest"
"$L" pull "$HUB/test-org/stories-GGUF/resolve/main/stories260K-Q8_0.gguf" >"$E2E_TMP/url2.out" 2>"$E2E_TMP/url2.err"; st=$?
ok $([ $st = 0 ] && [ "$(cat "$E2E_TMP/url2.out")" = "$LLM_MODELS_DIR/stories260K-Q8_0.gguf" ] && grep -q 'SHA-256 verified' "$E2E_TMP/url2.err"; echo $?) \
    "pull URL stores the file under its name, digest verified"
"$L" pull --sha256 "$(echo "$SHA" | tr 0-9a-f 1-9a-f0)" "$HUB/cdn/test-org/stories-GGUF/stories260K-F16.gguf" >/dev/null 2>"$E2E_TMP/url3.err"; st=$?
ok $([ $st = 1 ] && grep -q 'checksum mismatch' "$E2E_TMP/url3.err"; echo $?) "pull URL --sha256 wrong: refused"

# ---- file-system failures are reported clearly
mkdir -p "$E2E_TMP/ro" && chmod 555 "$E2E_TMP/ro"
if [ "$(id -u)" = 0 ]; then
    chmod 755 "$E2E_TMP"
    as_user() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
else
    as_user() { "$@"; }
fi
as_user "$L" pull --models-dir "$E2E_TMP/ro/models" test-org/stories-GGUF:Q8_0 >/dev/null 2>"$E2E_TMP/ro.err"; st=$?
ok $([ $st = 1 ] && grep -q 'cannot create the model directory .*ro/models: Permission denied' "$E2E_TMP/ro.err"; echo $?) \
    "unwritable model directory: exit 1, names the directory and the reason"
sed 's/^/# /' "$E2E_TMP/ro.err"
chmod 700 "$E2E_TMP"
mkdir -p "$E2E_TMP/small"
unshare -Urm sh -c 'mount -t tmpfs -o size=256k tmpfs "$1" && exec "$2" pull --models-dir "$1" big-org/model-GGUF:Q8_0' \
    sh "$E2E_TMP/small" "$L" >/dev/null 2>"$E2E_TMP/full.err"; st=$?
ok $([ $st = 1 ] && grep -q 'No space left on device.*resumes' "$E2E_TMP/full.err"; echo $?) \
    "full disk: exit 1, says no space left and that the same command resumes"
sed 's/^/# /' "$E2E_TMP/full.err" | tail -n 2

# ---- hub and repository errors
HF_ENDPOINT=http://127.0.0.1:1 "$L" pull -q nobody/nothing-GGUF >/dev/null 2>"$E2E_TMP/net.err"; st=$?
ok $([ $st = 1 ] && grep -q 'cannot reach the hub' "$E2E_TMP/net.err"; echo $?) "unreachable hub: a clear message ($st)"
"$L" pull -q nobody/nothing-GGUF >/dev/null 2>"$E2E_TMP/404.err"; st=$?
ok $([ $st = 1 ] && grep -q 'no such repository' "$E2E_TMP/404.err"; echo $?) "unknown repository: a clear message"
"$L" pull -q test-org/stories-GGUF:Q5_K_M >/dev/null 2>"$E2E_TMP/q.err"; st=$?
ok $([ $st = 1 ] && grep -q 'no GGUF file for Q5_K_M; it has: stories260K-Q8_0.gguf, stories260K-F16.gguf' "$E2E_TMP/q.err"; echo $?) \
    "unknown quantization: lists the ones there are"
"$L" pull -q test-org/tinygemma3v-GGUF:Q5_K_M >/dev/null 2>"$E2E_TMP/q2.err"; st=$?
ok $([ $st = 1 ] && grep -q 'no GGUF file for Q5_K_M; it has: tinygemma3v-Q8_0.gguf$' "$E2E_TMP/q2.err"; echo $?) \
    "unknown quantization of a vision repository: the projector files are left out of the list"
"$L" pull 'not a ref' >/dev/null 2>&1; st=$?
ok $([ $st = 2 ]; echo $?) "a malformed reference is a usage error (exit 2)"
e2e_done
