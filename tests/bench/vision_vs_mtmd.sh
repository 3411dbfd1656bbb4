#!/bin/sh
# vision_vs_mtmd.sh - time to encode one image: llm-fcgi bench --mmproj
# against llama.cpp's llama-mtmd-cli, runs alternating.
#
#   tests/bench/vision_vs_mtmd.sh [-t THREADS] [-k PAIRS] TEXT.gguf MMPROJ.gguf IMAGE
#
# Each pair: ours (`bench --mmproj --image --warmup 0 -r 1`: one encode in a
# fresh process, as mtmd-cli does one), then llama-mtmd-cli on the same
# image with the text model TEXT (mtmd-cli needs one whose width is the
# projector's; its chat template does not matter). Each side's own encode
# time is taken (ours: encode_ms; mtmd-cli: "mtmd batch encoding done in"),
# with the process's user + system CPU seconds (/usr/bin/time: the share of
# the cores it got on a busy machine shows in wall / cpu) and the 1-minute
# load average before the run. Prints a markdown row per run and the
# median of the per-pair ratios (pairing keeps a ratio honest when a shared
# machine's speed drifts). Benchmark only: never a pass/fail test.
# MTMD_CLI (default /tmp/llama.cpp/build/bin/llama-mtmd-cli) and LLM_FCGI
# (default build/llm-fcgi) name the two programs; MTMD_ARGS adds options to
# mtmd-cli's (e.g. "-fa off"). Real-shape files: tests/bench/mkvision_real.py.
set -e
top=$(cd "$(dirname "$0")/../.." && pwd)
ours=${LLM_FCGI:-$top/build/llm-fcgi}
theirs=${MTMD_CLI:-/tmp/llama.cpp/build/bin/llama-mtmd-cli}
t=2 pairs=3
while getopts t:k: o; do
    case $o in
    t) t=$OPTARG ;; k) pairs=$OPTARG ;;
    *) exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ $# -eq 3 ] || { echo "usage: $0 [-t THREADS] [-k PAIRS] TEXT.gguf MMPROJ.gguf IMAGE" >&2; exit 2; }
text=$1 mmproj=$2 image=$3
[ -x "$ours" ] && [ -x "$theirs" ] && [ -x /usr/bin/time ] || { echo "$0: need $ours, $theirs and /usr/bin/time" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
load() { cut -d' ' -f1 /proc/loadavg; }
echo "| pair | side | encode ms | process cpu s | load before |"
echo "|---|---|---|---|---|"
i=0
while [ $i -lt "$pairs" ]; do
    la=$(load)
    /usr/bin/time -f '%U %S' -o "$tmp/ta" "$ours" bench --mmproj "$mmproj" --image "$image" -t "$t" -r 1 --warmup 0 \
        --json > "$tmp/a.json" || { echo "$0: llm-fcgi bench failed" >&2; exit 1; }
    a=$(node -e 'console.log(JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).encode_ms[0].toFixed(0))' "$tmp/a.json")
    ca=$(awk '{ printf "%.1f", $1 + $2 }' "$tmp/ta")
    echo "| $((i + 1)) | llm-fcgi | $a | $ca | $la |"
    lb=$(load)
    # shellcheck disable=SC2086
    /usr/bin/time -f '%U %S' -o "$tmp/tb" "$theirs" -m "$text" --mmproj "$mmproj" --image "$image" -p "Describe." \
        -n 1 -t "$t" --temp 0 -c 4096 --chat-template chatml $MTMD_ARGS > "$tmp/b.log" 2>&1 < /dev/null ||
        { echo "$0: llama-mtmd-cli failed (a text model whose head size llama.cpp derives wrongly? run it with -lv 4):" >&2
          tail -n 5 "$tmp/b.log" >&2; exit 1; }
    b=$(sed -n 's/.*mtmd batch encoding done in \([0-9]*\) ms.*/\1/p' "$tmp/b.log" | head -n 1)
    [ -n "$b" ] || { echo "$0: no encode time from llama-mtmd-cli:" >&2; tail -n 5 "$tmp/b.log" >&2; exit 1; }
    cb=$(awk '{ printf "%.1f", $1 + $2 }' "$tmp/tb")
    echo "| $((i + 1)) | llama-mtmd-cli | $b | $cb | $lb |"
    echo "$a $b $ca $cb" >> "$tmp/pairs"
    i=$((i + 1))
done
awk '{ r[NR] = $2 / $1; c[NR] = $3 > 0 ? $4 / $3 : 0 } END {
    n = NR; for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) { if (r[j] < r[i]) { x = r[i]; r[i] = r[j]; r[j] = x }
                                                                    if (c[j] < c[i]) { x = c[i]; c[i] = c[j]; c[j] = x } }
    m = n % 2 ? r[(n + 1) / 2] : (r[n / 2] + r[n / 2 + 1]) / 2
    mc = n % 2 ? c[(n + 1) / 2] : (c[n / 2] + c[n / 2 + 1]) / 2
    printf "\nspeed-up (llama-mtmd-cli encode ms / ours), median of %d pairs: %.2fx (pairs: ", n, m
    for (i = 1; i <= n; i++) printf "%s%.2f", (i > 1 ? " " : ""), r[i]
    printf "); process CPU ratio: %.2fx\n", mc }' "$tmp/pairs"
