#!/bin/sh
# image_fuzz.sh - the image decoders and preprocessing under AddressSanitizer
# and UBSan (tests/tools/image_fuzz, always built with them): IMAGE_FUZZ_CASES
# mutated PNG / JPEG / WebP files (default 3000, about a minute on 2 cores;
# tests/bench/image_fuzz_long.sh runs more). Any sanitizer report fails.
# Emits TAP.
. "$(dirname "$0")/lib.sh"
GOLDEN=${LLM_GOLDEN_DIR:-$TOP_SRCDIR/../shared/golden}
FUZZ=${IMAGE_FUZZ:-$(dirname "$LLM_FCGI")/tests/tools/image_fuzz}
[ -x "$FUZZ" ] || bail "no image fuzzer (IMAGE_FUZZ=$FUZZ)"
[ -d "$GOLDEN/vision/images" ] || bail "no seed images in $GOLDEN/vision/images"
ASAN_OPTIONS=abort_on_error=0:detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    TAP_TIMEOUT=900 run_tap "$FUZZ" --cases "${IMAGE_FUZZ_CASES:-3000}" --seed "${IMAGE_FUZZ_SEED:-0x5eed}" \
    "$GOLDEN/vision/images"
if grep -qE 'AddressSanitizer|LeakSanitizer|runtime error:' "$E2E_TMP/sub.tap"; then
    ok 1 "no sanitizer report"; sed -n '/Sanitizer\|runtime error/,+20p' "$E2E_TMP/sub.tap" | head -40 | sed 's/^/# /'
else
    ok 0 "no sanitizer report"
fi
e2e_done
