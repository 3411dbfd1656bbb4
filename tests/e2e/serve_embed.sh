#!/bin/sh
# serve_embed.sh - end-to-end tests of embeddings and reranking (issue 25)
# through nginx with the real engine: embed.test.mjs with the official
# openai client on an embedding server (tinybert-mean, compared with
# llama.cpp's goldens, 16 concurrent requests, errors), then on two rerank
# servers (a BERT cross-encoder with the XLM-R unigram vocabulary, and a
# Qwen3 reranker with its rerank template); curl checks of TEI's shapes,
# --max-batch-inputs, /metrics, and a chat server refusing embeddings.
# Emits TAP.
. "$(dirname "$0")/lib.sh"

MODELS=${LLM_MODELS_DIR:-$TOP_SRCDIR/../shared/models}
MODEL_FILE=$MODELS/tinybert-mean-f32.gguf
LLM_GOLDEN_DIR=${LLM_GOLDEN_DIR:-$TOP_SRCDIR/../shared/golden}
export LLM_GOLDEN_DIR
need nginx node curl model binary openai

if ! start_server "$LLM_FCGI" serve -m "$MODEL_FILE" --served-model-name tinybert-mean-f32.gguf --api-key sk-emb \
        --threads 2 --max-batch-inputs 64; then
    ok 1 "llm-fcgi starts with $MODEL_FILE"
    e2e_done
    exit 1
fi
ok 0 "nginx + llm-fcgi start (tinybert-mean: an embedding server by itself)"
BASE=$BASE API_KEY=sk-emb MODEL=tinybert-mean-f32.gguf SUITE=embed run_node "$TOP_SRCDIR/tests/e2e/embed.test.mjs"

H='Authorization: Bearer sk-emb'
s=$(c -H "$H" -d '{"inputs":["Hello world","bye"],"normalize":false}' "$BASE/embed")
echo "$s" | grep -q '^\[\[-0\.59246[0-9]*,0\.17839[0-9]*,.*\],\[.*\]\]$'
ok $? "curl: TEI /embed is a list of vectors (normalize false: raw) ($(echo "$s" | cut -c1-60))"
s=$(c -H "$H" -d '{"inputs":"Hello world"}' "$BASE/invocations")
echo "$s" | grep -q '^\[\[-0\.1077[0-9]*,'
ok $? "curl: /invocations with inputs is TEI's /embed ($(echo "$s" | cut -c1-40))"
s=$(c -w '%{http_code}' -H "$H" -d '{"inputs":[]}' "$BASE/embed")
[ "$s" = "{\"error\":\"'inputs' must not be empty\",\"error_type\":\"validation\"}
400" ]
ok $? "curl: TEI errors in TEI's format ($s)"
big=$(node -e 'console.log(JSON.stringify({input: Array.from({length: 65}, (_, i) => "text " + i)}))')
s=$(c -w '%{http_code}' -H "$H" -d "$big" "$BASE/v1/embeddings")
echo "$s" | tr -d '\n' | grep -q '"message":"65 inputs in one request; the limit is 64 (--max-batch-inputs)".*413$'
ok $? "curl: more inputs than --max-batch-inputs: 413 with the limit"
s=$(c -w '%{http_code}' -H "$H" -d "{\"input\":\"$(printf 'word %.0s' $(seq 600))\",\"truncate_prompt_tokens\":-1}" "$BASE/v1/embeddings")
echo "$s" | tr -d '\n' | grep -q '"prompt_tokens":512,"total_tokens":512}}200$'
ok $? "curl: truncate_prompt_tokens -1 cuts a 602-token input to the 512 limit"
s=$(c -w '%{http_code}' -H "$H" -d '{"messages":[{"role":"user","content":"hi"}]}' "$BASE/v1/chat/completions")
echo "$s" | tr -d '\n' | grep -q 'not text generation.*404$'
ok $? "curl: chat on an embedding server: 404 saying what it serves"
m=$(c -H "$H" "$BASE/metrics")
n=$(echo "$m" | sed -n 's/^llm_fcgi_embedding_inputs_total //p')
t=$(echo "$m" | sed -n 's/^llm_fcgi_embedding_tokens_total //p')
[ "${n:-0}" -gt 100 ] && [ "${t:-0}" -gt 1000 ]
ok $? "curl: /metrics counts embedded inputs ($n) and tokens ($t)"
stop_server
ok $([ "$LLM_STATUS" = 0 ]; echo $?) "SIGTERM: exit 0 (got $LLM_STATUS)"

for f in tinybert-rerank-f32 tinyqwen3-rerank-f32; do
    MODEL_FILE=$MODELS/$f.gguf
    if ! start_server "$LLM_FCGI" serve -m "$MODEL_FILE" --served-model-name "$f.gguf" --rerank --threads 2; then
        ok 1 "llm-fcgi --rerank starts with $f"
        continue
    fi
    ok 0 "nginx + llm-fcgi --rerank start ($f)"
    BASE=$BASE MODEL_FILE=$MODEL_FILE SUITE=rerank run_node "$TOP_SRCDIR/tests/e2e/embed.test.mjs"
    stop_server
    ok $([ "$LLM_STATUS" = 0 ]; echo $?) "SIGTERM: exit 0 (got $LLM_STATUS)"
done

# a chat model's server does not serve embeddings
MODEL_FILE=$MODELS/stories260K.gguf
if start_server "$LLM_FCGI" serve -m "$MODEL_FILE" --threads 1 --ctx-size 256; then
    s=$(c -w '%{http_code}' -d '{"input":"x"}' "$BASE/v1/embeddings")
    echo "$s" | tr -d '\n' | grep -q 'start llm-fcgi serve with --embedding.*404$'
    ok $? "curl: embeddings on a chat server: 404 saying how to start one"
    s=$(c -w '%{http_code}' -d '{"query":"x","texts":["y"]}' "$BASE/rerank")
    echo "$s" | tr -d '\n' | grep -q '"error_type":"validation".*404$'
    ok $? "curl: TEI rerank on a chat server: 404 in TEI's format"
    stop_server
else
    ok 1 "llm-fcgi starts with stories260K"
fi
e2e_done
