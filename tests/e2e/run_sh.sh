#!/bin/sh
# run_sh.sh - the quick-start script refuses to run without a model and
# explains how to get one (exit non-zero, nothing installed or started).
. "$(dirname "$0")/lib.sh"
env -u LLM_MODEL timeout 20 sh "$TOP_SRCDIR/scripts/run.sh" >"$E2E_TMP/out" 2>&1; st=$?
ok $([ $st -ne 0 ]; echo $?) "no model: exit status non-zero ($st)"
grep -q 'LLM_MODEL' "$E2E_TMP/out" && grep -q 'SmolLM2-135M-Instruct' "$E2E_TMP/out" && grep -q 'curl -L' "$E2E_TMP/out"
ok $? "no model: explains LLM_MODEL / -m and how to download a GGUF"
timeout 20 sh "$TOP_SRCDIR/scripts/run.sh" -m "$E2E_TMP/missing.gguf" >"$E2E_TMP/out2" 2>&1; st=$?
ok $([ $st -ne 0 ] && grep -q 'cannot read model' "$E2E_TMP/out2"; echo $?) "unreadable model: clear message, non-zero"
timeout 20 sh "$TOP_SRCDIR/scripts/run.sh" --help | grep -q 'Ctrl-C'; ok $? "--help"
e2e_done
