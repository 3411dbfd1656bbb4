#!/bin/sh
# test_emulated_cpu.sh - the kernels and one greedy golden on emulated CPUs
# that lack what this machine may have (Debian's qemu-user, TCG): a
# Haswell (AVX2 + FMA + F16C, no AVX-512, no AVX-VNNI) and a Nehalem (no
# AVX at all). qemu traps every instruction its CPU model lacks, so a
# kernel that uses more than its level declares (cpu_features.h) dies with
# SIGILL here even on a machine that has every feature, instead of on a
# user's older Xeon. Times are those of emulation (10-50x slower): the
# cases are a subset. Emits TAP; skips (with the reason) where qemu-user or
# an x86-64 host is missing.
set -u
BIN=${LLM_FCGI:?}
MODELS=${LLM_MODELS_DIR:?}
BUILD=$(dirname "$BIN")
tmp=$(mktemp -d "${TMPDIR:-/tmp}/llm-qemu.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
n=0; failed=0
ok() { n=$((n + 1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=1; fi; }
QEMU=$(command -v qemu-x86_64 || true)
if [ "$(uname -m)" != x86_64 ] || [ -z "$QEMU" ]; then
    echo "ok 1 # SKIP no qemu-x86_64 on an x86-64 host (Debian package qemu-user; scripts/install-deps.sh installs it)"
    echo "1..1"; exit 0
fi
# emu CPU PROGRAM ARGS...: stdout of PROGRAM on the emulated CPU (qemu's
# warnings about host-only CPUID bits dropped); the exit status is PROGRAM's
# (no core files: a SIGILL is the finding, reported below)
ulimit -c 0 2>/dev/null
emu() { cpu=$1; shift; (cd "$tmp" && "$QEMU" -cpu "$cpu" "$@" 2>"$tmp/qemu.err"); }
# tap_run NAME CPU PROGRAM ARGS...: a TAP program on the emulated CPU; its
# failures and its exit status (132 = SIGILL) become cases here
tap_run() {
    name=$1; shift
    emu "$@" >"$tmp/tap.out"
    st=$?
    nok=$(grep -c '^not ok' "$tmp/tap.out")
    nall=$(grep -cE '^(not )?ok' "$tmp/tap.out")
    nskip=$(grep -c '# SKIP' "$tmp/tap.out")
    [ $st = 0 ] && [ "$nok" = 0 ] && [ "$nall" -gt 0 ]
    ok $? "$name: exit $st$([ $st -ge 128 ] && echo " (signal $((st - 128)))"), $nall cases, $nok failed, $nskip skipped"
    grep '^not ok' "$tmp/tap.out" | head -n 5 | sed 's/^/# /'
    grep -v 'TCG doesn.t support requested feature' "$tmp/qemu.err" | head -n 5 | sed 's/^/# /'
}

# Haswell: the avx2 level, and no higher one is even tried
emu Haswell "$BIN" info "$MODELS/stories260K.gguf" >"$tmp/info"
grep -q "^kernels: *avx2 (" "$tmp/info"; ok $? "Haswell: llm-fcgi info selects the avx2 level"
LLM_FCGI_ISA=avx512 emu Haswell "$BIN" info "$MODELS/stories260K.gguf" >/dev/null
[ $? = 2 ] && grep -q "cannot run that level: it lacks avx512f" "$tmp/qemu.err"
ok $? "Haswell: LLM_FCGI_ISA=avx512 refused (no AVX-512)"
LLM_FCGI_ISA=avxvnni emu Haswell "$BIN" info "$MODELS/stories260K.gguf" >/dev/null
[ $? = 2 ] && grep -q "it lacks avxvnni" "$tmp/qemu.err"; ok $? "Haswell: LLM_FCGI_ISA=avxvnni refused (no AVX-VNNI)"
tap_run "Haswell: test_kernels" Haswell "$BUILD/tests/unit/test_kernels"
grep -q '# SKIP avxvnni level: this CPU lacks avxvnni' "$tmp/tap.out" &&
    grep -q '# SKIP avx512 level: this CPU lacks avx512f' "$tmp/tap.out"
ok $? "Haswell: test_kernels skips the avxvnni and avx512 levels, naming what is missing"
tap_run "Haswell: greedy golden stories260K-q8_0 (packed Q8_0)" Haswell "$BUILD/tests/golden/test_greedy" stories260K-q8_0
tap_run "Haswell: greedy golden tiny256-q4_k_m (packed Q4_K, Q6_K)" Haswell "$BUILD/tests/golden/test_greedy" tiny256-q4_k_m

# Nehalem: no AVX, the scalar level; the binary itself needs nothing newer
tap_run "Nehalem: test_kernels" Nehalem "$BUILD/tests/unit/test_kernels"
grep -q '# SKIP avx2 level: this CPU lacks avx,fma,f16c,avx2,os-ymm-state' "$tmp/tap.out"
ok $? "Nehalem: test_kernels skips every SIMD level"
prompt="Once upon a time"
emu Nehalem "$BIN" generate -m "$MODELS/stories260K-q4_0.gguf" --temp 0 -n 24 "$prompt" >"$tmp/gen_emu"
st=$?
LLM_FCGI_ISA=scalar "$BIN" generate -m "$MODELS/stories260K-q4_0.gguf" --temp 0 -n 24 "$prompt" >"$tmp/gen_native" 2>/dev/null
[ $st = 0 ] && [ -s "$tmp/gen_emu" ] && cmp -s "$tmp/gen_emu" "$tmp/gen_native"
ok $? "Nehalem: generate runs (exit $st) and writes the scalar level's text"
echo "1..$n"
exit $failed
