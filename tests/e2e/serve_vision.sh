#!/bin/sh
# serve_vision.sh - image inputs end to end: `llm-fcgi serve --mmproj` on
# each vision fixture pair of ../shared/models behind nginx, driven with the
# official openai client (vision.test.mjs: llama.cpp's greedy goldens with
# images through /v1/chat/completions, usage, /invocations with LMI's
# example, TGI markdown images, the image cache on a follow-up turn), then
# the bad inputs (vision_errors.test.mjs) and remote images against a local
# HTTP server with and without the allow-list. Emits TAP.
. "$(dirname "$0")/lib.sh"

MODELS=${LLM_MODELS_DIR:-$TOP_SRCDIR/../shared/models}
GOLDEN=${LLM_GOLDEN_DIR:-$TOP_SRCDIR/../shared/golden}
MODEL_FILE=$MODELS/tinygemma3v-f32.gguf
need nginx node model binary openai
TMPL=$TOP_SRCDIR/tests/e2e/vision_template.jinja

# the raw template: the page's own text + image parts render as the prompt
# pair:text model:projector:gap (the issue's bar per pair; Q8_0 at the text
# file's bar, see tests/golden/test_vision_greedy.c)
for spec in gemma3-f32:tinygemma3v-f32:mmproj-tinygemma3v-f32:0.02 \
            gemma3-f32-mmf16:tinygemma3v-f32:mmproj-tinygemma3v-f16:0.05 \
            qwen25vl-f32:tinyqwen2vl-f32:mmproj-tinyqwen25vl-f32:0.02 \
            qwen3vl-f32:tinyqwen3vl-f32:mmproj-tinyqwen3vl-f32:0.02 \
            smolvlm-f32:tinysmolvlm-f32:mmproj-tinysmolvlm-f32:0.02; do
    pair=${spec%%:*}; rest=${spec#*:}; text=${rest%%:*}; rest=${rest#*:}; proj=${rest%%:*}; gap=${rest#*:}
    if ! start_server "$LLM_FCGI" serve -m "$MODELS/$text.gguf" --mmproj "$MODELS/$proj.gguf" \
            --served-model-name "$pair" --chat-template "$TMPL" --parallel 2 --threads 1 --ctx-size 2048 \
            --max-images 2 --max-image-bytes 300k --max-image-pixels 1000000; then
        ok 1 "llm-fcgi starts with $text + $proj"
        continue
    fi
    ok 0 "nginx + llm-fcgi --mmproj start ($pair)"
    PAIR=$pair GAP=$gap GOLDEN_DIR=$GOLDEN run_node "$TOP_SRCDIR/tests/e2e/vision.test.mjs"
    if [ "$pair" = gemma3-f32 ]; then
        GOLDEN_DIR=$GOLDEN E2E_TMP=$E2E_TMP run_node "$TOP_SRCDIR/tests/e2e/vision_errors.test.mjs"
        # the chat page with an image (screenshot kept as an artifact)
        if [ -x "${CHROMIUM:-/usr/bin/chromium}" ] && e2e_pkg puppeteer-core; then
            SHOTS=${SHOTS:-$PWD/tests/e2e/screenshots} IMAGE=$GOLDEN/vision/images/v01_png_rgb_224x224.png \
                NODE_TIMEOUT=240 run_node "$TOP_SRCDIR/tests/e2e/vision_page.test.mjs"
        else
            ok 1 "chromium and puppeteer-core for the page test"
        fi
    fi
    stop_server
    ok $([ "$LLM_STATUS" = 0 ]; echo $?) "$pair: SIGTERM, exit 0 (got $LLM_STATUS)"
done

# remote and file:// images: a local HTTP server, llm-fcgi with and without
# private addresses allowed
IMAGES=$GOLDEN/vision/images
IMAGE=$IMAGES/v01_png_rgb_224x224.png node "$TOP_SRCDIR/tests/e2e/image_server.mjs" >"$E2E_TMP/img.port" &
E2E_PIDS="$E2E_PIDS $!"
wait_until test -s "$E2E_TMP/img.port"
IMG_BASE=http://127.0.0.1:$(cat "$E2E_TMP/img.port")
IMAGE_B64=$(base64 -w0 "$IMAGES/v01_png_rgb_224x224.png")
export IMG_BASE IMAGE_B64
for mode in private open; do
    set -- --media-domains 127.0.0.1
    [ "$mode" = open ] && set -- "$@" --media-allow-private --media-timeout 2 --max-image-bytes 300k \
        --media-dir "$IMAGES"
    if ! start_server "$LLM_FCGI" serve -m "$MODELS/tinygemma3v-f32.gguf" --mmproj "$MODELS/mmproj-tinygemma3v-f32.gguf" \
            --served-model-name remote --chat-template "$TMPL" --threads 1 --ctx-size 1024 "$@"; then
        ok 1 "llm-fcgi starts with remote images ($mode)"
        continue
    fi
    MODE=$mode MEDIA_DIR=$IMAGES run_node "$TOP_SRCDIR/tests/e2e/vision_remote.test.mjs"
    stop_server
done
e2e_done
