#!/bin/sh
# Installs what is missing (Debian packages), builds llm-fcgi and runs the whole test suite (unit, golden and end-to-end
# tests through nginx). Ends with "N passed, N failed"; exits non-zero on any
# failure. Fixtures come from $LLM_MODELS_DIR / $LLM_GOLDEN_DIR (default
# ../shared/models and ../shared/golden next to this checkout).
set -e
top=$(cd "$(dirname "$0")/.." && pwd)
sh "$top/scripts/install-deps.sh"
"$top/scripts/build.sh"
if [ -f "$top/tests/e2e/package.json" ] && [ ! -d "$top/tests/e2e/node_modules" ]; then
    (cd "$top/tests/e2e" && npm ci --no-audit --no-fund --loglevel=error)
fi
cd "$top/build"
set +e
make -j"$(nproc)" check
status=$?
set -e
log=test-suite.log
count() { sed -n "s/^# $1: *\([0-9][0-9]*\).*/\1/p" "$log" | head -n 1; }
pass=$(count PASS); fail=$(count FAIL); err=$(count ERROR); xpass=$(count XPASS)
pass=${pass:-0}; failed=$(( ${fail:-0} + ${err:-0} + ${xpass:-0} ))
if [ "$failed" -gt 0 ]; then
    grep -E '^(FAIL|ERROR|XPASS):' "$log" | head -n 50
fi
if [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then failed=1; fi
echo "$pass passed, $failed failed"
[ "$failed" -eq 0 ]
