#!/bin/sh
# requant_test.sh - tests/bench/requant against llama-quantize's own output:
# tiny256-f32.gguf -> Q8_0 must be byte for byte tiny256-q8_0.gguf (made by
# llama-quantize), and stories260K.gguf -> Q8_0 byte for byte
# stories260K-q8_0.gguf (ggml's quantizer, ffn_down F16 because its rows
# are 172 wide); requantizing a quantized file (Q4_K/Q6_K) loads and runs.
# Emits TAP.
MODELS=${LLM_MODELS_DIR:-$(dirname "$0")/../../../shared/models}
REQUANT=${REQUANT:-$(dirname "$LLM_FCGI")/tests/bench/requant}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/llm-requant.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
n=0
failed=0
ok() {
    n=$((n + 1))
    if [ "$1" -eq 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=$((failed + 1)); fi
}
for f in tiny256-f32 tiny256-q8_0 stories260K stories260K-q8_0 tiny256-q4_k_m; do
    [ -f "$MODELS/$f.gguf" ] || { echo "not ok 1 - fixture $MODELS/$f.gguf missing"; echo "1..1"; exit 1; }
done
[ -x "$REQUANT" ] || { echo "not ok 1 - no requant binary ($REQUANT)"; echo "1..1"; exit 1; }

"$REQUANT" "$MODELS/tiny256-f32.gguf" "$TMP/t.gguf" 2>"$TMP/err"
ok $? "requant tiny256-f32.gguf runs ($(cat "$TMP/err"))"
cmp -s "$TMP/t.gguf" "$MODELS/tiny256-q8_0.gguf"
ok $? "requant tiny256-f32.gguf is byte for byte llama-quantize's tiny256-q8_0.gguf"

# stories260K-q8_0.gguf has the same tensor data but in the source's
# tensor order (ggquant.py): the engine must compute the same bits
"$REQUANT" "$MODELS/stories260K.gguf" "$TMP/s.gguf" 2>"$TMP/err"
ok $? "requant stories260K.gguf runs ($(cat "$TMP/err"))"
"$LLM_FCGI" info "$TMP/s.gguf" >"$TMP/info" 2>&1
grep -qE '^ +f16 +5 tensors' "$TMP/info"
ok $? "stories260K: the 172-wide ffn_down rows become F16"
"$LLM_FCGI" generate -m "$TMP/s.gguf" --temp 0 -n 24 -t 1 --json "Once upon a time" >"$TMP/a.json" 2>/dev/null &&
    "$LLM_FCGI" generate -m "$MODELS/stories260K-q8_0.gguf" --temp 0 -n 24 -t 1 --json "Once upon a time" >"$TMP/b.json" 2>/dev/null &&
    cmp -s "$TMP/a.json" "$TMP/b.json"
ok $? "stories260K requantized: the same tokens and logprobs as stories260K-q8_0.gguf"

# from a K-quant mixture: every 2-D weight Q8_0, and the engine runs it
"$REQUANT" "$MODELS/tiny256-q4_k_m.gguf" "$TMP/k.gguf" 2>"$TMP/err"
ok $? "requant tiny256-q4_k_m.gguf runs ($(cat "$TMP/err"))"
"$LLM_FCGI" info "$TMP/k.gguf" >"$TMP/info" 2>&1
grep -q 'q8_0' "$TMP/info" && ! grep -qiE '^ +(q[2-6]_k|q4_0|q4_1|q5_0|q5_1) ' "$TMP/info"
ok $? "tiny256-q4_k_m requantized: only Q8_0 (and F32 norms) tensors"
"$LLM_FCGI" generate -m "$TMP/k.gguf" --temp 0 -n 4 -t 1 "Hello" >/dev/null 2>"$TMP/err"
ok $? "the requantized model generates"

# bad input: an error, no output file
echo "not a gguf" >"$TMP/bad.gguf"
"$REQUANT" "$TMP/bad.gguf" "$TMP/out.gguf" 2>"$TMP/err"
st=$?
ok $([ $st = 1 ] && [ ! -e "$TMP/out.gguf" ] && grep -q 'requant: ' "$TMP/err"; echo $?) "a bad file: exit 1 with a message (exit $st)"
echo "1..$n"
[ "$failed" -eq 0 ]
