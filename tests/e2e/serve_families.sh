#!/bin/sh
# serve_families.sh - the model families end to end: `llm-fcgi serve` on each
# fixture of ../shared/models (qwen3, qwen3moe, gemma3, phi3, smollm3,
# gpt-oss, and the 2026 qwen35, qwen35moe, gemma4 (dense, MoE) and lfm2;
# F32, where the engine is bit-exact with llama.cpp) behind nginx,
# driven with the official openai SDK (families.test.mjs): llama.cpp's
# greedy texts and logprobs, streaming, n, chat, prefix caching across
# sliding windows, /metrics. The full API suite (api.test.mjs) also runs on
# the qwen3moe and gemma3 fixtures. Emits TAP.
. "$(dirname "$0")/lib.sh"

MODELS=${LLM_MODELS_DIR:-$TOP_SRCDIR/../shared/models}
GOLDEN=${LLM_GOLDEN_DIR:-$TOP_SRCDIR/../shared/golden}
MODEL_FILE=$MODELS/tinygemma3-f32.gguf
need nginx node model binary openai

# family, sliding window, full API suite; then the 2026 hybrids (goldens in
# families/; RECURRENT: a per-sequence recurrent state beside the KV cache)
for spec in qwen3:0:no qwen3moe:0:yes gemma3:32:yes phi3:0:no smollm3:0:no gptoss:40:no \
        qwen35:0:no qwen35moe:0:no gemma4:32:no gemma4moe:32:no lfm2:0:no; do
    fam=${spec%%:*}; rest=${spec#*:}; window=${rest%%:*}; full=${rest#*:}
    file=$MODELS/tiny$fam-f32.gguf
    golden=$GOLDEN/greedy-tiny$fam-f32.jsonl recurrent=0
    [ -f "$golden" ] || golden=$GOLDEN/families/greedy-tiny$fam-f32.jsonl
    case $fam in qwen35*|lfm2) recurrent=1;; esac
    # small prompt chunks: prompts are prefilled over several steps, and
    # registered in the prefix cache chunk by chunk
    if ! start_server "$LLM_FCGI" serve -m "$file" --served-model-name "tiny$fam" --parallel 4 --threads 1 \
            --ctx-size 1024 --batch-tokens 64; then
        ok 1 "llm-fcgi starts with $file"
        continue
    fi
    ok 0 "nginx + llm-fcgi start with tiny$fam"
    MODEL=tiny$fam GOLDEN=$golden WINDOW=$window RECURRENT=$recurrent \
        run_node "$TOP_SRCDIR/tests/e2e/families.test.mjs"
    if [ "$full" = yes ]; then
        MODEL=tiny$fam E2E_CONCURRENCY=1 run_node "$TOP_SRCDIR/tests/e2e/api.test.mjs"
    fi
    stop_server
    ok $([ "$LLM_STATUS" = 0 ]; echo $?) "tiny$fam: SIGTERM, exit 0 (got $LLM_STATUS)"
done
e2e_done
