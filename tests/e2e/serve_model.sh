#!/bin/sh
# serve_model.sh - end-to-end tests of `serve` through nginx with the REAL
# engine on the fixture model stories260K.gguf: the OpenAI SDK suite
# (api.test.mjs) with greedy decoding. Emits TAP.
. "$(dirname "$0")/lib.sh"

MODEL_FILE=${LLM_MODELS_DIR:-$TOP_SRCDIR/../shared/models}/stories260K.gguf
need nginx node model binary openai

if ! start_server "$LLM_FCGI" serve -m "$MODEL_FILE" --served-model-name stories --api-key sk-real \
        --parallel 4 --threads 1 --ctx-size 1024 --batch-tokens 128; then
    ok 1 "llm-fcgi starts with $MODEL_FILE"
    e2e_done
    exit 1
fi
ok 0 "nginx + llm-fcgi start with stories260K"
BASE=$BASE API_KEY=sk-real MODEL=stories E2E_CONCURRENCY=1 run_node "$TOP_SRCDIR/tests/e2e/api.test.mjs"
# a prompt longer than one engine step (chunked prefill), streamed and not
long=$(i=0; while [ $i -lt 60 ]; do printf 'Once upon a time there was a cat. '; i=$((i + 1)); done)
a=$(c -H 'Authorization: Bearer sk-real' -d "{\"prompt\":\"$long\",\"max_tokens\":12,\"temperature\":0}" "$BASE/v1/completions")
echo "$a" | grep -q '"prompt_tokens":[0-9]\{3\}'; ok $? "a 600-token prompt is prefilled in chunks"
b=$(c -N -H 'Authorization: Bearer sk-real' -d "{\"prompt\":\"$long\",\"max_tokens\":12,\"temperature\":0,\"stream\":true}" "$BASE/v1/completions" \
    | sed -n 's/^data: {.*"text":"\([^"]*\)".*/\1/p' | tr -d '\n')
t=$(echo "$a" | sed -n 's/.*"text":"\([^"]*\)".*/\1/p')
ok $([ -n "$t" ] && [ "$t" = "$b" ]; echo $?) "long prompt: streamed text equals non-streamed ('$t')"
a2=$(c -H 'Authorization: Bearer sk-real' -d "{\"prompt\":\"$long\",\"max_tokens\":12,\"temperature\":0}" "$BASE/v1/completions")
t2=$(echo "$a2" | sed -n 's/.*"text":"\([^"]*\)".*/\1/p')
cached=$(echo "$a2" | sed -n 's/.*"cached_tokens":\([0-9]*\).*/\1/p')
ok $([ "${cached:-0}" -gt 0 ] && [ "$t2" = "$t" ]; echo $?) "repeated prompt: prefix cache reports $cached cached tokens, same text"
stop_server
ok $([ "$LLM_STATUS" = 0 ]; echo $?) "SIGTERM: exit 0 (got $LLM_STATUS)"
e2e_done
