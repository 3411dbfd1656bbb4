#!/bin/sh
# serve_hybrid_chat.sh - the 2026 families with their real chat templates
# end to end: llm-fcgi serve on tinyqwen35 with Qwen3.5's template and on
# tinygemma4 with Gemma 4's (../shared/golden/templates), behind nginx;
# the parsers are detected from the templates (start-up log); then the SDK
# suite hybrid_chat.test.mjs (rendering, thinking, forced tool calls in
# each family's syntax, a follow-up turn from the cache). Emits TAP.
. "$(dirname "$0")/lib.sh"

MODELS=${LLM_MODELS_DIR:-$TOP_SRCDIR/../shared/models}
TEMPLATES=${LLM_GOLDEN_DIR:-$TOP_SRCDIR/../shared/golden}/templates
MODEL_FILE=$MODELS/tinyqwen35-f32.gguf
need nginx node model binary openai

for spec in qwen35:Qwen3.5-4B:qwen3:qwen3_coder gemma4:google-gemma-4-31B-it:gemma4:gemma4; do
    fam=${spec%%:*}; rest=${spec#*:}; tmpl=${rest%%:*}; rest=${rest#*:}; rp=${rest%%:*}; tp=${rest#*:}
    if ! start_server "$LLM_FCGI" serve -m "$MODELS/tiny$fam-f32.gguf" --served-model-name "tiny$fam" --parallel 2 \
            --threads 1 --ctx-size 2048 --batch-tokens 64 --chat-template "$TEMPLATES/$tmpl.jinja"; then
        ok 1 "llm-fcgi starts with tiny$fam and $tmpl.jinja"
        continue
    fi
    grep -q "using the --chat-template file; reasoning parser $rp (detected); tool-call parser $tp (detected)" "$E2E_TMP/llm.log"
    ok $? "tiny$fam: start-up log: $tmpl.jinja, reasoning parser $rp, tool-call parser $tp detected"
    MODEL=tiny$fam FAMILY=$fam run_node "$TOP_SRCDIR/tests/e2e/hybrid_chat.test.mjs"
    stop_server
    ok $([ "$LLM_STATUS" = 0 ]; echo $?) "tiny$fam: SIGTERM, exit 0 (got $LLM_STATUS)"
done
e2e_done
