#!/bin/sh
# serve_grammar.sh - structured output (response_format, guided_*,
# structured_outputs, llama.cpp's json_schema/grammar, forced tool calls)
# end to end through nginx with the official openai SDK, every output
# validated by ajv + ajv-formats:
#  1. stories260K with the hermes tools template, no reasoning parser;
#  2. the scripted fixture model (reasoning + tool-call scripts);
#  3. stories260K with other tool-call parsers (JSON-object, named-JSON,
#     name+JSON and XML-parameter layouts): forced calls in that format
#     come back through its parser.
# Emits TAP.
. "$(dirname "$0")/lib.sh"

MODEL_FILE=${LLM_MODELS_DIR:-$TOP_SRCDIR/../shared/models}/stories260K.gguf
need nginx node model binary openai
e2e_pkg ajv-formats || bail "ajv-formats missing (npm ci in tests/e2e)"

if ! start_server "$LLM_FCGI" serve -m "$MODEL_FILE" --served-model-name stories --api-key sk-g \
        --parallel 4 --threads 1 --ctx-size 1024 --chat-template "$TOP_SRCDIR/tests/e2e/tools_template.jinja" \
        --reasoning-parser none; then
    ok 1 "llm-fcgi starts (stories260K)"
    e2e_done
    exit 1
fi
BASE=$BASE API_KEY=sk-g MODEL=stories SUITE=stories run_node "$TOP_SRCDIR/tests/e2e/grammar.test.mjs"
stop_server
ok $([ "$LLM_STATUS" = 0 ]; echo $?) "SIGTERM: exit 0 (got $LLM_STATUS)"

MODEL_FILE=$E2E_TMP/scripted.gguf
scripted_model "$MODEL_FILE"
ok $? "mk_scripted writes the fixture model"
if start_server "$LLM_FCGI" serve -m "$MODEL_FILE" --served-model-name scripted --threads 1 --ctx-size 1024; then
    BASE=$BASE MODEL=scripted SUITE=scripted run_node "$TOP_SRCDIR/tests/e2e/grammar.test.mjs"
    stop_server
else
    ok 1 "llm-fcgi starts (scripted)"
fi
for fmt in granite deepseek_v31 apertus gigachat31 deepseek_v3 qwen3_coder glm45 minimax_m2 deepseek_v32 pythonic gemma4 \
        kimi_k3; do
    case $fmt in qwen3_coder|glm45|minimax_m2|deepseek_v32|kimi_k3) xml=1 ;; *) xml=0 ;; esac
    MODEL_FILE=${LLM_MODELS_DIR:-$TOP_SRCDIR/../shared/models}/stories260K.gguf
    if start_server "$LLM_FCGI" serve -m "$MODEL_FILE" --served-model-name stories --threads 1 --ctx-size 2048 \
            --chat-template "$TOP_SRCDIR/tests/e2e/tools_template.jinja" --reasoning-parser none --tool-call-parser "$fmt"; then
        BASE=$BASE MODEL=stories SUITE=format FORMAT=$fmt XML=$xml run_node "$TOP_SRCDIR/tests/e2e/grammar.test.mjs"
        stop_server
    else
        ok 1 "llm-fcgi starts (stories260K, --tool-call-parser $fmt)"
    fi
done
e2e_done
