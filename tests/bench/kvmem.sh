#!/bin/sh
# kvmem.sh - KV cache memory of a long context, measured (a benchmark
# program for docs/performance.md, not a test): serves MODEL with one slot
# of CTX positions, prints what `llm-fcgi info` plans, then sends one
# prompt of N token ids (default CTX - 8) and reports the server's
# /metrics KV figures and its anonymous resident memory (RssAnon: the KV
# cache and scratch; the weights are a file mapping) before and after.
#
#   tests/bench/kvmem.sh MODEL [CTX] [N]
# Needs llm-fcgi (LLM_FCGI, default build/llm-fcgi) and nginx (through
# tests/e2e/lib.sh). The prompt is prefilled in full: minutes for a 1B
# model at 32k positions on two cores.
top=$(cd "$(dirname "$0")/../.." && pwd)
LLM_FCGI=${LLM_FCGI:-$top/build/llm-fcgi}
TOP_SRCDIR=$top
. "$top/tests/e2e/lib.sh"
M=${1:?usage: kvmem.sh MODEL [CTX] [N]}
CTX=${2:-32768}
N=${3:-$((CTX - 8))}
"$LLM_FCGI" info --ctx-size "$CTX" "$M" | grep -E '^(architecture|layers|sliding window|KV cache)'
start_server "$LLM_FCGI" serve -m "$M" --parallel 1 --ctx-size "$CTX" --batch-tokens 512 || exit 1
rss() { sed -n 's/^RssAnon:[^0-9]*\([0-9]*\).*/\1/p' "/proc/$LLM_PID/status"; }
metric() { curl -s -m 10 "$BASE/metrics" | sed -n "s/^$1{[^}]*} //p"; }
echo "idle: RssAnon $(rss) kB, llm_kv_cache_bytes $(metric llm_kv_cache_bytes)"
# N token ids (3 .. 402, never BOS/EOS), max_tokens 1
node -e "const n=+process.argv[1];const t=[];for(let i=0;i<n;i++)t.push(3+(i*7919)%400);
process.stdout.write(JSON.stringify({prompt:t,max_tokens:1,temperature:0}))" "$N" >"$E2E_TMP/body.json"
start=$(date +%s)
curl -s -m 36000 -d @"$E2E_TMP/body.json" "$BASE/v1/completions" >"$E2E_TMP/reply.json"
end=$(date +%s)
grep -o '"prompt_tokens":[0-9]*' "$E2E_TMP/reply.json"
# the sequence has ended (its blocks are free or cached), but every block
# it touched stays resident: RssAnon is the memory the context really took
echo "after $N positions ($((end - start)) s): RssAnon $(rss) kB, llm_kv_cache_bytes $(metric llm_kv_cache_bytes)"
stop_server
