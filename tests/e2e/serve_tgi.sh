#!/bin/sh
# serve_tgi.sh - end-to-end tests of the TGI / SageMaker LMI text-generation
# schema (issue 15) through nginx with the REAL engine: tgi.test.mjs with
# the @huggingface/inference client on stories260K.gguf (every parameter,
# details, prefill logprobs against prompt_logprobs, stop sequences, seeds,
# refusals, /invocations with inputs, POST /, /info), then on the scripted
# fixture model (end-of-sequence token, stops ending inside tokens,
# --lmi-finish-reasons), plus curl checks of the raw wire formats.
# Emits TAP.
. "$(dirname "$0")/lib.sh"

MODEL_FILE=${LLM_MODELS_DIR:-$TOP_SRCDIR/../shared/models}/stories260K.gguf
need nginx node curl model binary openai
e2e_pkg @huggingface/inference || bail "the @huggingface/inference npm package is missing (npm ci in tests/e2e)"

if ! start_server "$LLM_FCGI" serve -m "$MODEL_FILE" --served-model-name stories --api-key sk-tgi \
        --parallel 4 --threads 1 --ctx-size 512 --batch-tokens 128; then
    ok 1 "llm-fcgi starts with $MODEL_FILE"
    e2e_done
    exit 1
fi
ok 0 "nginx + llm-fcgi start (stories260K)"
BASE=$BASE API_KEY=sk-tgi MODEL=stories SUITE=stories run_node "$TOP_SRCDIR/tests/e2e/tgi.test.mjs"

H='Authorization: Bearer sk-tgi'
P='{"inputs":"Once upon a time","parameters":{"max_new_tokens":3,"details":true}}'
# curl: the SSE wire format of /generate_stream
s=$(c -N -H "$H" -d "$P" "$BASE/generate_stream")
n=$(echo "$s" | grep -c '^data: {"index":[0-9]*,"token":{"id":[0-9]*,"text":"[^"]*","logprob":-\{0,1\}[0-9.e-]*,"special":false},"generated_text":null,"details":null}$')
echo "$s" | grep -q '^data: {"index":3,"token":{[^}]*},"generated_text":", there was","details":{"finish_reason":"length","generated_tokens":3,"seed":null,"input_length":5}}$'
ok $([ $? = 0 ] && [ "$n" = 2 ]; echo $?) "curl: /generate_stream events are TGI's, byte for byte in shape"
# curl: LMI JSON lines on /invocations
s=$(c -N -H "$H" -D "$E2E_TMP/h" -d '{"inputs":"Once upon a time","stream":true,"parameters":{"max_new_tokens":2,"details":true}}' "$BASE/invocations")
grep -qi '^content-type: application/jsonlines' "$E2E_TMP/h" && [ "$(echo "$s" | wc -l)" = 2 ] \
    && echo "$s" | head -1 | grep -q '^{"token":{"id":432,"text":",","log_prob":-[0-9.e-]*}}$' \
    && echo "$s" | tail -1 | grep -q '"generated_text":", there","details":{"finish_reason":"length","generated_tokens":2,"inputs":"Once upon a time"}}$'
ok $? "curl: /invocations stream is LMI's JSON lines"
# curl: /invocations, both schemas side by side
s=$(c -H "$H" -d '{"inputs":"Once upon a time","parameters":{"max_new_tokens":3}}' "$BASE/invocations")
[ "$s" = '{"generated_text":", there was"}' ]
ok $? "curl: /invocations with inputs answers {\"generated_text\"} ($s)"
s=$(c -H "$H" -d '{"prompt":"Once upon a time","max_tokens":3,"temperature":0}' "$BASE/invocations")
echo "$s" | grep -q '"object":"text_completion".*"text":", there was"'
ok $? "curl: /invocations with prompt is still a completion"
# curl: errors keep their shape per endpoint
s=$(c -w '%{http_code}' -H "$H" -d '{"inputs":"x","parameters":{"watermark":true}}' "$BASE/generate")
[ "$s" = '{"error":"Input validation error: `watermark` is not supported by this server","error_type":"validation"}
422' ]
ok $? "curl: TGI error body and status ($s)"
s=$(c -w '%{http_code}' -H 'Authorization: Bearer wrong' -d '{}' "$BASE/v1/completions")
echo "$s" | tr -d '\n' | grep -q '^{"error":{"message":.*"code":"invalid_api_key"}}401$'
ok $? "curl: OpenAI endpoints keep OpenAI's error shape"
stop_server
ok $([ "$LLM_STATUS" = 0 ]; echo $?) "SIGTERM: exit 0 (got $LLM_STATUS)"

# the scripted model: a real end-of-sequence token, --lmi-finish-reasons
SCRIPTED=$E2E_TMP/scripted.gguf
scripted_model "$SCRIPTED" || bail "cannot write the scripted fixture model"
if ! start_server "$LLM_FCGI" serve -m "$SCRIPTED" --served-model-name scripted --parallel 2 --threads 1 \
        --ctx-size 256 --lmi-finish-reasons; then
    ok 1 "llm-fcgi starts with the scripted model"
    e2e_done
    exit 1
fi
ok 0 "nginx + llm-fcgi start (scripted model, --lmi-finish-reasons)"
BASE=$BASE MODEL=scripted SUITE=scripted run_node "$TOP_SRCDIR/tests/e2e/tgi.test.mjs"
stop_server
ok $([ "$LLM_STATUS" = 0 ]; echo $?) "SIGTERM: exit 0 (got $LLM_STATUS)"
e2e_done
