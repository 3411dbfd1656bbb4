#!/bin/sh
# serve_decoding.sh - end-to-end tests of the decoding controls (issue 4)
# through nginx with the REAL engine on stories260K.gguf: the SDK suite
# decoding.test.mjs (sampling, stop, logprobs against the golden top-5, n,
# echo, prompt_logprobs, MindIE extras, rejections) plus curl checks of the
# raw SSE. Emits TAP.
. "$(dirname "$0")/lib.sh"

MODEL_FILE=${LLM_MODELS_DIR:-$TOP_SRCDIR/../shared/models}/stories260K.gguf
GOLDEN_FILE=${LLM_GOLDEN_DIR:-$TOP_SRCDIR/../shared/golden}/greedy-stories260K.jsonl
need nginx node model binary openai
[ -f "$GOLDEN_FILE" ] || bail "golden file $GOLDEN_FILE missing"

if ! start_server "$LLM_FCGI" serve -m "$MODEL_FILE" --served-model-name stories --api-key sk-dec \
        --parallel 4 --threads 1 --ctx-size 512 --batch-tokens 128 --temperature 0 --max-n 4 --mindie-extras; then
    ok 1 "llm-fcgi starts with $MODEL_FILE"
    e2e_done
    exit 1
fi
ok 0 "nginx + llm-fcgi start (--temperature 0 --max-n 4 --mindie-extras)"
BASE=$BASE API_KEY=sk-dec MODEL=stories GOLDEN=$GOLDEN_FILE run_node "$TOP_SRCDIR/tests/e2e/decoding.test.mjs"

H='Authorization: Bearer sk-dec'
# curl: a stop string split across tokens never leaks while streaming
s=$(c -N -H "$H" -d '{"prompt":"Once upon a time","max_tokens":20,"temperature":0,"stop":["little g"],"stream":true}' "$BASE/v1/completions")
echo "$s" | grep -q '"text":"[^"]*little' ; leak=$?
echo "$s" | grep -q '"finish_reason":"stop","stop_reason":"little g"'
ok $([ $? = 0 ] && [ $leak != 0 ]; echo $?) "curl: streamed stop string is held back, never sent, stop_reason in the last chunk"
# curl: chat logprobs chunk shape
s=$(c -N -H "$H" -d '{"messages":[{"role":"user","content":"Hi"}],"max_tokens":3,"temperature":0,"logprobs":true,"top_logprobs":1,"stream":true}' "$BASE/v1/chat/completions")
echo "$s" | grep -q '"logprobs":{"content":\[{"token":"[^"]*","logprob":-\?[0-9.e-]*,"bytes":\[[0-9,]*\],"top_logprobs":\[{"token"'
ok $? "curl: streamed chat chunk carries logprobs.content in the OpenAI shape"
# curl: n interleaves in one SSE stream, [DONE] once
s=$(c -N -H "$H" -d '{"prompt":"Lily","max_tokens":4,"temperature":1,"seed":2,"n":3,"stream":true}' "$BASE/v1/completions")
ok $([ "$(echo "$s" | grep -c '"index":2')" -ge 4 ] && [ "$(echo "$s" | grep -c '^data: \[DONE\]')" = 1 ]; echo $?) "curl: n=3 streamed, index 2 present, one [DONE]"
# curl: prompt_logprobs on completions
s=$(c -H "$H" -d '{"prompt":"Once upon a time","max_tokens":1,"temperature":0,"prompt_logprobs":1}' "$BASE/v1/completions")
echo "$s" | grep -q '"prompt_logprobs":\[null,{"403":{"logprob":-[0-9.e-]*,"rank":1,"decoded_token":" Once"}}'
ok $? "curl: completions prompt_logprobs per choice, vLLM shape"
# n > 1 evaluates the prompt once: the other choices attach its KV blocks
hits() { c -H "$H" "$BASE/metrics" | sed -n 's/^llm_prefix_cache_hit_tokens_total{[^}]*} //p'; }
h0=$(hits)
long=$(i=0; while [ $i -lt 6 ]; do printf 'A fox ran %d times around the old red barn. ' $i; i=$((i + 1)); done)
s=$(c -H "$H" -d "{\"prompt\":\"$long\",\"max_tokens\":3,\"temperature\":0,\"n\":3}" "$BASE/v1/completions")
h1=$(hits)
ok $([ $((h1 - h0)) -ge 64 ] && echo "$s" | grep -q '"index":2'; echo $?) "n=3: choices 1 and 2 reuse the prompt's KV blocks ($((h1 - h0)) cached tokens)"
stop_server
ok $([ "$LLM_STATUS" = 0 ]; echo $?) "SIGTERM: exit 0 (got $LLM_STATUS)"
e2e_done
