#!/bin/sh
# test_cli.sh - the llm-fcgi subcommands as a user runs them (TAP).
# Needs LLM_FCGI (the binary) and LLM_MODELS_DIR / LLM_GOLDEN_DIR.
set -u
BIN=${LLM_FCGI:?}
MODELS=${LLM_MODELS_DIR:?}
GOLDEN=${LLM_GOLDEN_DIR:?}
M=$MODELS/stories260K.gguf
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
n=0; failed=0
ok() { n=$((n + 1)); if [ "$1" -eq 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=$((failed + 1)); fi; }
check() { desc=$1; shift; "$@" >/dev/null 2>&1; ok $? "$desc"; }

"$BIN" help > "$TMP/help" 2>&1
ok $? "help exits 0"
for c in info tokenize generate bench; do
    grep -q "^  $c " "$TMP/help"; ok $? "help lists $c"
done
"$BIN" nosuchcommand >/dev/null 2>&1; [ $? -eq 2 ]; ok $? "unknown command exits 2"

"$BIN" info "$M" > "$TMP/info" 2>&1; ok $? "info exits 0"
grep -q "^architecture: *llama" "$TMP/info"; ok $? "info names the architecture"
grep -q "^parameters: *292800" "$TMP/info"; ok $? "info counts parameters"
grep -q "512 tokens" "$TMP/info"; ok $? "info gives the vocabulary size"
grep -q "bos *1 '<s>'" "$TMP/info"; ok $? "info lists the BOS token"
grep -q "^chat template: *absent" "$TMP/info"; ok $? "info says whether a chat template is present"
grep -q "f32 *48 tensors" "$TMP/info"; ok $? "info gives tensor count per type"
"$BIN" info --ctx-size 1024 "$M" | grep -q "0.62 MiB for a context of 1024"; ok $? "info gives KV memory for --ctx-size"
# sliding-window layers count their window, not the context (tinygemma3: 1
# global layer of 6 keeps 32768 positions, 5 local ones a window of 32 plus
# a batch of 512: 4.36 MiB instead of 24)
"$BIN" info --ctx-size 32768 "$MODELS/tinygemma3-f32.gguf" > "$TMP/info_swa" 2>&1
grep -q "^sliding window: *32 positions on 5 of 6 layers" "$TMP/info_swa"; ok $? "info gives the sliding window"
grep -q "4.36 MiB for a context of 32768 tokens.*24.00 MiB if the window were ignored" "$TMP/info_swa"
ok $? "info counts the window layers' window only"
"$BIN" info "$MODELS/tinyqwen3moe-f32.gguf" | grep -q "^experts: *8, 2 per token"; ok $? "info gives the experts"

# kernel levels: LLM_FCGI_ISA never selects a level the CPU cannot run.
# LLM_FCGI_CPU_DISABLE makes this machine a CPU without the named features,
# so the refusals are tested whatever CPU runs the suite.
LLM_FCGI_CPU_DISABLE=avxvnni LLM_FCGI_ISA=avxvnni "$BIN" info "$M" >"$TMP/isa" 2>&1
st=$?
[ $st -eq 2 ] && grep -q "LLM_FCGI_ISA=avxvnni: this CPU (.*) cannot run that level: it lacks avxvnni$" "$TMP/isa"
ok $? "LLM_FCGI_ISA naming a level the CPU lacks: refused at start naming the missing feature (exit $st)"
for c in serve generate bench; do
    LLM_FCGI_CPU_DISABLE=avx512vnni LLM_FCGI_ISA=avx512 "$BIN" $c -m "$M" x >"$TMP/isa" 2>&1
    st=$?
    [ $st -eq 2 ] && grep -q "cannot run that level: it lacks .*avx512vnni" "$TMP/isa"
    ok $? "$c refuses LLM_FCGI_ISA=avx512 without AVX-512 VNNI (exit $st)"
done
LLM_FCGI_CPU_DISABLE=os-ymm-state LLM_FCGI_ISA=avx2 "$BIN" info "$M" >"$TMP/isa" 2>&1
[ $? -eq 2 ] && grep -q "lacks os-ymm-state" "$TMP/isa"; ok $? "a level whose registers the OS does not save is refused"
LLM_FCGI_ISA=avx3 "$BIN" info "$M" >"$TMP/isa" 2>&1
[ $? -eq 2 ] && grep -q "LLM_FCGI_ISA=avx3 is not a kernel level (scalar, avx2, avxvnni or avx512)" "$TMP/isa"
ok $? "an unknown LLM_FCGI_ISA is refused with the levels"
LLM_FCGI_CPU_DISABLE=sse9 "$BIN" info "$M" >"$TMP/isa" 2>&1
[ $? -eq 2 ] && grep -q "unknown CPU feature 'sse9'" "$TMP/isa"; ok $? "an unknown LLM_FCGI_CPU_DISABLE name is refused"
LLM_FCGI_CPU_DISABLE=avx2 "$BIN" info "$M" >"$TMP/isa" 2>&1
grep -q "^kernels: *scalar (.*the best level it has; LLM_FCGI_CPU_DISABLE takes away avx2)" "$TMP/isa"
ok $? "without AVX2 the best level is scalar, and info says why"
LLM_FCGI_ISA=scalar "$BIN" info "$M" | grep -q "^kernels: *scalar (.*LLM_FCGI_ISA=scalar selects it"
ok $? "LLM_FCGI_ISA=scalar runs anywhere"
LLM_FCGI_CPU_DISABLE=avx2 LLM_FCGI_ISA=avx512 "$BIN" tokenize -m "$M" "Once" >/dev/null 2>&1
ok $? "commands that run no kernels ignore the kernel level"
LLM_FCGI_CPU_DISABLE=avx512f,avxvnni "$BIN" generate -m "$M" --temp 0 -n 24 "Once upon a time" >"$TMP/gen_avx2" 2>/dev/null &&
    LLM_FCGI_ISA=scalar "$BIN" generate -m "$M" --temp 0 -n 24 "Once upon a time" >"$TMP/gen_scalar" 2>/dev/null &&
    cmp -s "$TMP/gen_avx2" "$TMP/gen_scalar"
ok $? "a CPU without AVX-512 or AVX-VNNI generates the same text as the scalar level"

# vocabulary-only files and architectures the engine does not run
V="$GOLDEN/tokenizer/ggml-vocab-gemma-4.gguf"
"$BIN" info "$V" > "$TMP/vinfo" 2>&1; ok $? "info on a vocabulary-only gemma4 file exits 0"
grep -q "^architecture: *gemma4" "$TMP/vinfo"; ok $? "info names its architecture"
grep -q "^runnable: *no (vocabulary-only" "$TMP/vinfo"; ok $? "info says it is not runnable and why"
grep -q "^vocabulary: *gemma4 .*262144 tokens, pre-tokenizer 'gemma4'" "$TMP/vinfo"; ok $? "info reports the gemma4 vocabulary"
grep -q "bos *2 '<bos>'" "$TMP/vinfo"; ok $? "info lists its BOS token"
grep -q "end of generation *3" "$TMP/vinfo"; ok $? "info counts its end-of-generation tokens"
"$BIN" info "$GOLDEN/tokenizer/ggml-vocab-qwen35.gguf" 2>&1 | grep -q "pre-tokenizer 'qwen35'"
ok $? "info reports the qwen35 pre-tokenizer"
cp "$M" "$TMP/otherarch.gguf"
# same file with general.architecture renamed in place (same length): not runnable
perl -pi -e 's/general\.architecture\x08\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00llama/general.architecture\x08\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00zzzzz/s' "$TMP/otherarch.gguf"
grep -q zzzzz "$TMP/otherarch.gguf"; ok $? "made a copy with an unknown architecture"
"$BIN" info "$TMP/otherarch.gguf" > "$TMP/oinfo" 2>&1; ok $? "info on an unknown architecture exits 0"
grep -q "^runnable: *no (architecture 'zzzzz'" "$TMP/oinfo"; ok $? "info says the architecture is not supported"
grep -q "512 tokens" "$TMP/oinfo"; ok $? "info still reports its vocabulary"

"$BIN" info /nonexistent.gguf > "$TMP/err" 2>&1; [ $? -eq 1 ]; ok $? "info on a missing file exits 1"
grep -q "nonexistent.gguf" "$TMP/err"; ok $? "the error names the file"
head -c 1000 "$M" > "$TMP/trunc.gguf"
"$BIN" info "$TMP/trunc.gguf" > "$TMP/err" 2>&1; [ $? -eq 1 ]; ok $? "info on a truncated file exits 1"
grep -Eq "truncated|exceeds|outside the file" "$TMP/err"; ok $? "the error says what is wrong"

out=$("$BIN" tokenize -m "$M" --json "Once upon a time" 2>/dev/null)
[ "$out" = "[1,403,407,261,378]" ] || [ "$out" = "[1, 403, 407, 261, 378]" ]; ok $? "tokenize --json matches llama.cpp ($out)"
out=$("$BIN" tokenize -m "$M" --json --no-bos "Once upon a time" 2>/dev/null)
[ "$out" = "[403,407,261,378]" ] || [ "$out" = "[403, 407, 261, 378]" ]; ok $? "tokenize --no-bos ($out)"

# greedy generation equals llama.cpp's golden tokens
"$BIN" generate -m "$M" --temp 0 -n 48 --json "Once upon a time" > "$TMP/gen.json" 2>"$TMP/gen.err"
ok $? "generate --json exits 0"
node -e '
const fs = require("fs");
const g = JSON.parse(fs.readFileSync(process.argv[1] + "/greedy-stories260K.jsonl", "utf8").split("\n")[0]);
const o = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const same = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);
let bad = [];
if (!same(o.prompt_tokens, g.prompt_tokens)) bad.push("prompt_tokens");
if (!same(o.tokens, g.completion_tokens)) bad.push("tokens");
if (o.text !== g.completion_text) bad.push("text");
if (o.top_logprobs.length !== o.tokens.length || o.top_logprobs[0].length !== 5) bad.push("top_logprobs shape");
if (Math.abs(o.top_logprobs[0][0].logprob - g.top_probs[0][0].logprob) > 2e-3) bad.push("logprob");
if (bad.length) { console.error(bad.join(",")); process.exit(1); }
' "$GOLDEN" "$TMP/gen.json"
ok $? "generate --temp 0 reproduces llama.cpp's greedy tokens, text and logprobs"

a=$("$BIN" generate -m "$M" --temp 0.9 --seed 42 -n 24 --json "Lily" 2>/dev/null)
b=$("$BIN" generate -m "$M" --temp 0.9 --seed 42 -n 24 --json "Lily" 2>/dev/null)
c=$("$BIN" generate -m "$M" --temp 0.9 --seed 43 -n 24 --json "Lily" 2>/dev/null)
[ -n "$a" ] && [ "$a" = "$b" ]; ok $? "same seed, same output"
[ "$a" != "$c" ]; ok $? "different seed, different output"
"$BIN" generate -m "$M" -n 5 >/dev/null 2>&1; [ $? -eq 2 ]; ok $? "generate without a prompt exits 2"
"$BIN" generate -m "$M" -c 8 -n 16 "Once upon a time there was" >/dev/null 2>"$TMP/err"; [ $? -eq 1 ]; ok $? "prompt beyond the context exits 1"
grep -q "context" "$TMP/err"; ok $? "and says so"

"$BIN" bench -m "$M" -p 16 -n 8 -r 1 --json > "$TMP/bench.json" 2>&1; ok $? "bench --json exits 0"
node -e 'const o = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
process.exit(o.pp_tokens_per_s > 0 && o.tg_tokens_per_s > 0 ? 0 : 1)' "$TMP/bench.json"
ok $? "bench --json reports pp_tokens_per_s and tg_tokens_per_s"

"$BIN" bench -m "$M" -p 16 -n 4 -r 1 --prefix 100 --json > "$TMP/bench2.json" 2>&1; ok $? "bench --prefix exits 0"
node -e 'const o = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
process.exit(o.prefix_tokens === 100 && o.prefix_uncached_ms > 0 && o.prefix_cached_ms > 0 ? 0 : 1)' "$TMP/bench2.json"
ok $? "bench --prefix reports the uncached and cached time to first token"

# long context (issue 30): bench at a depth, flash attention, quantized KV
M64=$MODELS/tinyqwen3-q8_0.gguf
"$BIN" bench -m "$M64" -p 16 -n 4 -d 1100 -r 2 -fa on -ctk q8_0 -ctv q4_0 --json > "$TMP/bench3.json" 2>&1
ok $? "bench -d 1100 -fa on -ctk q8_0 -ctv q4_0 exits 0"
node -e 'const o = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
process.exit(o.depth === 1100 && o.flash_attn === "on" && o.cache_type_k === "q8_0" && o.cache_type_v === "q4_0" &&
  o.pp_tokens_per_s > 0 && o.tg_tokens_per_s > 0 && o.kv_bytes > 0 ? 0 : 1)' "$TMP/bench3.json"
ok $? "bench --json reports the depth, the attention and the cache types"
"$BIN" bench -m "$M64" -p 16 -n 4 -d 64 -r 1 > "$TMP/bench4.txt" 2>&1
grep -q "pp16 @ d64" "$TMP/bench4.txt" && grep -q "tg4 @ d64" "$TMP/bench4.txt"; ok $? "bench names the tests as llama-bench (pp16 @ d64)"
"$BIN" bench -m "$M" -p 16 -n 0 -r 1 -ctk q8_0 > /dev/null 2> "$TMP/err"; [ $? -eq 1 ] && grep -q "multiple of 32" "$TMP/err"
ok $? "a quantized cache on a head size that is not a multiple of 32 is refused, and says why"
"$BIN" bench -m "$M64" -p 16 -n 0 -r 1 -fa off -ctk q8_0 > /dev/null 2> "$TMP/err"; [ $? -eq 1 ] && grep -q "flash" "$TMP/err"
ok $? "a quantized cache with --flash-attn off is refused, and says why"
"$BIN" info -ctk q8_0 -ctv q8_0 --ctx-size 4096 "$M64" > "$TMP/info" 2>&1
grep -q "KV cache (K q8_0, V q8_0)" "$TMP/info" && grep -q "by cache type: *f16" "$TMP/info" && grep -q "up to" "$TMP/info"
ok $? "info reports the KV memory of the cache types and the longest context"

echo "1..$n"
[ "$failed" -eq 0 ]
