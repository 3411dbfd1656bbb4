#!/bin/sh
# distcheck.sh - `make distcheck` with what the tests need from this
# checkout: the shared fixtures (../shared, or $LLM_MODELS_DIR /
# $LLM_GOLDEN_DIR) and the e2e tests' npm packages (tests/e2e/node_modules,
# installed here with npm ci when missing), which the read-only tarball copy
# that distcheck builds and tests cannot hold. Builds ./build first.
set -e
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/build.sh" >/dev/null
if [ ! -d "$top/tests/e2e/node_modules" ]; then
    (cd "$top/tests/e2e" && npm ci --no-audit --no-fund --loglevel=error)
fi
export LLM_MODELS_DIR="${LLM_MODELS_DIR:-$top/../shared/models}"
export LLM_GOLDEN_DIR="${LLM_GOLDEN_DIR:-$top/../shared/golden}"
export E2E_NODE_MODULES="$top/tests/e2e/node_modules"
cd "$top/build"
exec make distcheck
