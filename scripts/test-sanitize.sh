#!/usr/bin/env bash
# The tests again, built with AddressSanitizer + UndefinedBehaviorSanitizer and warnings as errors,
# in ./build-sanitize, through the compiler cache (scripts/compiler-cache.sh). -O1, as
# AddressSanitizer recommends; -g1: the line tables a report's stack trace needs, without the full
# debug info, which took a third of the compile time (docs/BENCHMARKS.md, "CI time").
# Only what the tests run is built: no CUDA plugin (never instrumented, CMakeLists.txt), no
# benchmarks. Tests labelled no_sanitize are left out: their time goes into code the sanitizers do
# not instrument (tests/CMakeLists.txt names them and says why).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/compiler-cache.sh
cmake -S . -B build-sanitize -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" \
  -DOPMETER_SANITIZE=ON -DOPMETER_WERROR=ON -DOPMETER_BENCH=OFF -DOPMETER_CUDA=OFF "${compiler_cache_args[@]}" >/dev/null
cmake --build build-sanitize -j"$(nproc)"
ctest --test-dir build-sanitize --output-on-failure -j"$(nproc)" --label-exclude no_sanitize
