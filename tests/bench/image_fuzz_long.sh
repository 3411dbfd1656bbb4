#!/bin/sh
# image_fuzz_long.sh - the image fuzzer (tests/tools/image_fuzz, built with
# AddressSanitizer and UBSan) for longer than the suite runs it: CASES per
# seed (default 100000) for each of SEEDS random seeds (default 4). Any
# sanitizer report or crash stops it with a non-zero status.
#   tests/bench/image_fuzz_long.sh [BUILD_DIR] [IMAGE_DIR]
set -e
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$top/build}
images=${2:-${LLM_GOLDEN_DIR:-$top/../shared/golden}/vision/images}
for i in $(seq 1 "${SEEDS:-4}"); do
    seed=$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')
    echo "seed 0x$seed"
    out=$(UBSAN_OPTIONS=halt_on_error=1 "$build/tests/tools/image_fuzz" --cases "${CASES:-100000}" --seed "0x$seed" \
        "$images" 2>&1) || { echo "$out" | tail -n 40; exit 1; }
    if echo "$out" | grep -qE 'Sanitizer|runtime error'; then echo "$out" | grep -A20 -E 'Sanitizer|runtime error' | head -n 40; exit 1; fi
    echo "$out" | tail -n 2
done
