#!/bin/sh
# serve_formats.sh - every reasoning and tool-call parser end to end through
# nginx with the official openai SDK (formats.test.mjs): the REAL engine
# runs the scripted fixture model (tests/fixtures/scripted_model.h), which
# writes each format's markup token by token. One server per format, its
# parsers chosen with --reasoning-parser / --tool-call-parser (the generic
# reasoning parser through --reasoning-start / --reasoning-end); then two
# real golden templates with the parsers detected from them: Qwen3.5
# (qwen3 + qwen3_coder, arguments passed as objects) and DeepSeek-R1
# (deepseek_r1 + deepseek_v3, arguments passed as JSON strings). Emits TAP.
. "$(dirname "$0")/lib.sh"

MODEL_FILE=$E2E_TMP/scripted.gguf
GOLDEN=${LLM_GOLDEN_DIR:-$TOP_SRCDIR/../shared/golden}
need nginx node binary openai
scripted_model "$MODEL_FILE"
ok $? "mk_scripted writes the fixture model"
need model

# run FORMAT THINK SUITE LOG_LINE SERVE_ARGS...
run() {
    fmt=$1 think=$2 suite=$3 line=$4
    shift 4
    if ! start_server "$LLM_FCGI" serve -m "$MODEL_FILE" --served-model-name scripted --parallel 2 --threads 1 \
            --ctx-size 4096 "$@"; then
        ok 1 "[$suite] llm-fcgi starts ($*)"
        return
    fi
    grep -q -- "$line" "$E2E_TMP/llm.log"
    ok $? "[$suite] start-up log: $line"
    BASE=$BASE MODEL=scripted FORMAT=$fmt THINK=$think SUITE=$suite run_node "$TOP_SRCDIR/tests/e2e/formats.test.mjs"
    stop_server
    ok $([ "$LLM_STATUS" = 0 ]; echo $?) "[$suite] SIGTERM: exit 0 (got $LLM_STATUS; sanitizer builds fail here on leaks)"
}

# FORMAT THINK REASONING-PARSER
while read -r fmt think rp; do
    run "$fmt" "$think" "$fmt" "reasoning parser $rp (--reasoning-parser); tool-call parser $fmt (--tool-call-parser)" \
        --reasoning-parser "$rp" --tool-call-parser "$fmt"
done <<'LIST'
qwen3_coder 0 qwen3
gpt-oss 0 gpt-oss
mistral 0 mistral
deepseek_v3 1 deepseek_r1
deepseek_v31 1 deepseek_v3
deepseek_v31 0 deepseek_v3
kimi_k2 0 kimi_k2
glm45 0 glm45
granite 0 granite
pythonic 0 none
minimax_m2 0 minimax_m2
seed_oss 0 seed_oss
phi4_mini_json 0 none
deepseek_v32 1 deepseek_v3
deepseek_v4 1 deepseek_v3
gemma4 0 gemma4
nemotron_json 0 qwen3
kimi_k3 0 kimi_k3
cohere_command3 0 cohere_command3
apriel 0 apriel
minimax 0 none
gigachat3 0 none
gigachat31 0 none
apertus 0 apertus
minimax_m3 0 minimax_m3
hy_v3 0 hy_v3
solar_open 0 solar_open
minicpm5 0 qwen3
functionary_v31 0 none
functionary_v32 0 none
muse_glimmer 0 muse_glimmer
LIST
run llama3_json 0 llama3_json "reasoning parser generic (--reasoning-parser); tool-call parser llama3_json" \
    --reasoning-start '<|begin_of_thought|>' --reasoning-end '<|end_of_thought|>' --tool-call-parser llama3_json

# the real templates: parsers and the arguments form detected from them
run qwen3_coder 1 qwen35 \
    "reasoning parser qwen3 (detected); tool-call parser qwen3_coder (detected); tool call arguments passed as objects" \
    --chat-template "$GOLDEN/templates/Qwen3.5-4B.jinja"
run deepseek_v3 1 r1 \
    "reasoning parser deepseek_r1 (detected); tool-call parser deepseek_v3 (detected); tool call arguments passed as JSON strings" \
    --chat-template "$GOLDEN/templates/deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja"
e2e_done
