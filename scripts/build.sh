#!/usr/bin/env bash
# Installs missing packages, then configures and builds opmeter (Release) in ./build, through the
# compiler cache where there is one (scripts/compiler-cache.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
source scripts/compiler-cache.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "${compiler_cache_args[@]}" >/dev/null
cmake --build build -j"$(nproc)"
