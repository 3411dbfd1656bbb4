#!/bin/sh
# Configures (once) and builds llm-fcgi in ./build. Extra arguments go to
# configure, e.g. scripts/build.sh --enable-sanitizers.
set -e
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
[ -x configure ] || autoreconf -fi
mkdir -p build
cd build
[ -f Makefile ] || ../configure "$@"
make -j"$(nproc)"
