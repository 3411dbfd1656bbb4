#!/bin/sh
# serve_model.sh - end-to-end tests of `serve` through nginx with the REAL
# engine on the fixture model stories260K.gguf: the OpenAI SDK suite
# (api.test.mjs) with greedy decoding. Skips while the engine cannot load
# the model yet. Emits TAP.
. "$(dirname "$0")/lib.sh"

MODEL_FILE=${LLM_MODELS_DIR:-$TOP_SRCDIR/../shared/models}/stories260K.gguf
command -v nginx >/dev/null || skip_all "nginx not installed"
command -v node >/dev/null || skip_all "node not installed"
[ -f "$MODEL_FILE" ] || skip_all "fixture model $MODEL_FILE missing"
[ -x "$LLM_FCGI" ] || skip_all "no llm-fcgi binary"
[ -d "$TOP_SRCDIR/tests/e2e/node_modules/openai" ] || skip_all "run npm ci in tests/e2e"

if ! start_server "$LLM_FCGI" serve -m "$MODEL_FILE" --served-model-name stories --api-key sk-real \
        --parallel 4 --threads 1 --ctx-size 256; then
    if grep -q 'cannot load model\|cannot start the engine' "$E2E_TMP/llm.log"; then
        skip_all "the engine cannot serve $MODEL_FILE yet: $(head -c 200 "$E2E_TMP/llm.log" | tr '\n' ' ')"
    fi
    ok 1 "llm-fcgi starts with $MODEL_FILE"
    e2e_done
    exit 1
fi
ok 0 "nginx + llm-fcgi start with stories260K"
BASE=$BASE API_KEY=sk-real MODEL=stories E2E_CONCURRENCY=1 run_node "$TOP_SRCDIR/tests/e2e/api.test.mjs"
stop_server
ok $([ "$LLM_STATUS" = 0 ]; echo $?) "SIGTERM: exit 0 (got $LLM_STATUS)"
e2e_done
