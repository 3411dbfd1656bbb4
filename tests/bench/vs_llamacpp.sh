#!/bin/sh
# vs_llamacpp.sh - llm-fcgi bench against llama-bench, alternating runs.
#
#   tests/bench/vs_llamacpp.sh [-t THREADS] [-P N] [-n N] [-r REPS] [-k PAIRS] MODEL.gguf...
#
# For each model: PAIRS pairs of runs (ours, then llama-bench), each run
# -r REPS repetitions of pp N (-P) and tg N (-n) on THREADS threads; prints
# one markdown row per model with the median t/s of each side and the median
# of the per-pair ratios (pairing keeps a ratio honest when a shared
# machine's speed drifts). Benchmark only: never a pass/fail test.
# LLAMA_BENCH (default /tmp/llama.cpp/build/bin/llama-bench) and LLM_FCGI
# (default build/llm-fcgi) name the two programs.
set -e
top=$(cd "$(dirname "$0")/../.." && pwd)
ours=${LLM_FCGI:-$top/build/llm-fcgi}
theirs=${LLAMA_BENCH:-/tmp/llama.cpp/build/bin/llama-bench}
t=2 pp=512 tg=128 reps=3 pairs=3
while getopts t:P:n:r:k: o; do
    case $o in
    t) t=$OPTARG ;; P) pp=$OPTARG ;; n) tg=$OPTARG ;; r) reps=$OPTARG ;; k) pairs=$OPTARG ;;
    *) exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || { echo "usage: $0 [-t THREADS] [-P N] [-n N] [-r REPS] [-k PAIRS] MODEL.gguf..." >&2; exit 2; }
[ -x "$ours" ] && [ -x "$theirs" ] || { echo "$0: need $ours and $theirs" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "| model | pp$pp ours / llama.cpp t/s | ratio | tg$tg ours / llama.cpp t/s | ratio | decode % of read bandwidth (ours) |"
echo "|---|---|---|---|---|---|"
for m in "$@"; do
    i=0
    while [ $i -lt "$pairs" ]; do
        "$ours" bench -m "$m" -t "$t" -p "$pp" -n "$tg" -r "$reps" --json > "$tmp/a$i.json"
        "$theirs" -m "$m" -t "$t" -p "$pp" -n "$tg" -r "$reps" -o jsonl 2>/dev/null > "$tmp/b$i.jsonl"
        i=$((i + 1))
    done
    node -e '
const fs = require("fs"), dir = process.argv[1], n = +process.argv[2], name = process.argv[3];
const med = a => { const s = [...a].sort((x, y) => x - y); const k = s.length >> 1; return s.length % 2 ? s[k] : (s[k - 1] + s[k]) / 2; };
const A = [], B = [];
for (let i = 0; i < n; i++) {
  A.push(JSON.parse(fs.readFileSync(`${dir}/a${i}.json`, "utf8")));
  const rows = fs.readFileSync(`${dir}/b${i}.jsonl`, "utf8").trim().split("\n").map(l => JSON.parse(l));
  B.push({ pp: (rows.find(r => r.n_prompt > 0) || {}).avg_ts || 0, tg: (rows.find(r => r.n_gen > 0) || {}).avg_ts || 0 });
}
const f = x => x.toFixed(1);
const col = (a, b) => a.every(x => x) ? [`${f(med(a))} / ${f(med(b))}`, `${med(a.map((x, i) => x / b[i])).toFixed(2)}x`] : ["-", "-"];
const pp = col(A.map(a => a.pp_tokens_per_s), B.map(b => b.pp));
const tg = col(A.map(a => a.tg_tokens_per_s), B.map(b => b.tg));
const bw = A.every(a => a.tg_percent_of_memory_bw) ? `${med(A.map(a => a.tg_percent_of_memory_bw)).toFixed(0)}% of ${(med(A.map(a => a.memory_read_bytes_per_s)) / 1e9).toFixed(1)} GB/s` : "-";
console.log(`| ${name} | ${pp[0]} | ${pp[1]} | ${tg[0]} | ${tg[1]} | ${bw} |`);
' "$tmp" "$pairs" "$(basename "$m" .gguf)"
done
