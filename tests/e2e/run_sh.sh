#!/bin/sh
# run_sh.sh - the quick-start script: without a model it pulls the default
# one (SmolLM2-135M-Instruct Q8_0) from the hub and serves it through nginx
# (a local hub double stands in for Hugging Face); without network it says
# so and how to pass a local file; an unreadable file is a clear error;
# SIGTERM (Ctrl-C in a terminal) stops nginx and llm-fcgi; a vision repository
# is served with the projector pulled beside its model (an image in a chat
# message is answered), and without it under --no-mmproj. Runs with
# --no-install and the already built binary ($LLM_FCGI). Emits TAP.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/hub_double.sh"
MODEL_FILE=${LLM_MODELS_DIR:-$TOP_SRCDIR/../shared/models}/stories260K.gguf
need nginx node curl model binary
RUN=$TOP_SRCDIR/scripts/run.sh
export LLM_FCGI LLM_MODELS_DIR="$E2E_TMP/models" LLM_RUN_DIR="$E2E_TMP/run"
unset LLM_MODEL LLM_DEFAULT_MODEL HF_TOKEN

# ---- no model and no network: says so, and how to serve a local file
HF_ENDPOINT=http://127.0.0.1:1 timeout 60 sh "$RUN" --no-install >"$E2E_TMP/out" 2>&1; st=$?
ok $([ $st -ne 0 ]; echo $?) "no model, hub unreachable: exit status non-zero ($st)"
grep -q 'could not download HuggingFaceTB/SmolLM2-135M-Instruct-GGUF:Q8_0' "$E2E_TMP/out" &&
    grep -q 'no network' "$E2E_TMP/out" && grep -q 'scripts/run.sh -m /path/to/model.gguf' "$E2E_TMP/out"
ok $? "no model, hub unreachable: names the default model, says why and how to pass a local file"
[ -z "$(find "$LLM_MODELS_DIR" -name '*.gguf' 2>/dev/null)" ]; ok $? "nothing left in the model directory"

# ---- an unreadable file, --help
timeout 20 sh "$RUN" --no-install -m "$E2E_TMP/missing.gguf" >"$E2E_TMP/out2" 2>&1; st=$?
ok $([ $st -ne 0 ] && grep -q 'cannot read model' "$E2E_TMP/out2"; echo $?) "unreadable model: clear message, non-zero"
timeout 20 sh "$RUN" --help | grep -q 'SmolLM2-135M-Instruct'; ok $? "--help names the default model"

# ---- no model: the default is pulled from the hub and served
hub_add HuggingFaceTB/SmolLM2-135M-Instruct-GGUF smollm2-135m-instruct-q8_0.gguf "$MODEL_FILE"
hub_add test-org/tinygemma3v-GGUF tinygemma3v-Q8_0.gguf "$(dirname "$MODEL_FILE")/tinygemma3v-q8_0.gguf"
hub_add test-org/tinygemma3v-GGUF mmproj-tinygemma3v-F16.gguf "$(dirname "$MODEL_FILE")/mmproj-tinygemma3v-f16.gguf"
hub_start || { ok 1 "hub double starts"; e2e_done; exit 1; }
RUN_PORT=$(free_port)
sh "$RUN" --no-install --port "$RUN_PORT" -- --threads 1 >"$E2E_TMP/run.out" 2>&1 &
RUN_PID=$!
E2E_PIDS="$E2E_PIDS $RUN_PID"
served() { [ "$(c -o /dev/null -w '%{http_code}' "http://127.0.0.1:$RUN_PORT/v1/models")" = 200 ]; }
wait_until served; ok $? "run.sh with no model starts serving on the given port"
grep -q 'fetching the default, HuggingFaceTB/SmolLM2-135M-Instruct-GGUF:Q8_0' "$E2E_TMP/run.out" &&
    [ -f "$LLM_MODELS_DIR/HuggingFaceTB/SmolLM2-135M-Instruct-GGUF/smollm2-135m-instruct-q8_0.gguf" ]
ok $? "it said it fetches the default model, and the file is in the model directory"
code=$(c -o "$E2E_TMP/cmpl.json" -w '%{http_code}' "http://127.0.0.1:$RUN_PORT/v1/completions" \
    -H 'Content-Type: application/json' -d '{"prompt":"Once upon a time","max_tokens":8}')
ok $([ "$code" = 200 ] && grep -q '"text"' "$E2E_TMP/cmpl.json"; echo $?) "the pulled model answers a completion through nginx ($code)"
kill -TERM "$RUN_PID"
gone() { ! kill -0 "$RUN_PID" 2>/dev/null; }
wait_until gone; ok $? "SIGTERM stops run.sh (as Ctrl-C does in a terminal: a background job ignores SIGINT)"
down() { [ "$(c -o /dev/null -w '%{http_code}' "http://127.0.0.1:$RUN_PORT/v1/models")" = 000 ]; }
no_llm() { ! pgrep -f -- "--socket $LLM_RUN_DIR/llm-fcgi.sock" >/dev/null; }
wait_until down && wait_until no_llm
ok $? "nginx (the port is closed) and llm-fcgi (no process on its socket) are gone"

# ---- a vision repository: its projector is pulled and served
TMPL=$TOP_SRCDIR/tests/e2e/vision_template.jinja
IMG=$(base64 -w0 "${LLM_GOLDEN_DIR:-$TOP_SRCDIR/../shared/golden}/vision/images/v01_png_rgb_224x224.png")
printf '{"messages":[{"role":"user","content":[{"type":"text","text":"What is it?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,%s"}}]}],"max_tokens":4}' \
    "$IMG" >"$E2E_TMP/img.json"
# run_vision NAME RUN_OPTIONS...: serves test-org/tinygemma3v-GGUF:Q8_0, sends
# the image; sets code (HTTP status) and leaves the output in $E2E_TMP/NAME.out
run_vision() {
    name=$1; shift
    RUN_PORT=$(free_port)
    sh "$RUN" --no-install --port "$RUN_PORT" -m test-org/tinygemma3v-GGUF:Q8_0 "$@" -- --threads 1 \
        --chat-template "$TMPL" --ctx-size 1024 >"$E2E_TMP/$name.out" 2>&1 &
    RUN_PID=$!
    E2E_PIDS="$E2E_PIDS $RUN_PID"
    code=000
    if wait_until served; then
        code=$(c -o "$E2E_TMP/$name.json" -w '%{http_code}' "http://127.0.0.1:$RUN_PORT/v1/chat/completions" \
            -H 'Content-Type: application/json' --data-binary @"$E2E_TMP/img.json")
    fi
    kill -TERM "$RUN_PID"
    wait_until gone && wait_until down
}
run_vision vision
grep -q 'vision projector mmproj-tinygemma3v-F16.gguf' "$E2E_TMP/vision.out" &&
    [ -f "$LLM_MODELS_DIR/test-org/tinygemma3v-GGUF/mmproj-tinygemma3v-F16.gguf" ]
ok $? "run.sh -m a vision repository: pulls the projector beside the model and says it serves it"
ok $([ "$code" = 200 ] && grep -q '"prompt_tokens":[2-9][0-9]' "$E2E_TMP/vision.json"; echo $?) \
    "an image in a chat message is answered, its rows counted in the prompt ($code)"
run_vision novision --no-mmproj
ok $([ "$code" = 400 ] && ! grep -q 'vision projector' "$E2E_TMP/novision.out"; echo $?) \
    "--no-mmproj: served without the projector, an image is refused with 400 ($code)"
e2e_done
