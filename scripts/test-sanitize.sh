#!/usr/bin/env bash
# The tests again, built with AddressSanitizer + UndefinedBehaviorSanitizer and warnings as errors,
# in ./build-sanitize (at -O1, as AddressSanitizer recommends), through the compiler cache
# (scripts/compiler-cache.sh). Only what the tests run is built: the test binary and the test CLI,
# plugins and libraries it loads; no CUDA plugin (it is never instrumented, CMakeLists.txt), no
# benchmarks, no `opmeter` executable. The tests labelled no_sanitize are left out: they spend
# their time in code ASan/UBSan do not instrument (tests/CMakeLists.txt says which and why).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/compiler-cache.sh
cmake -S . -B build-sanitize -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g" \
  -DOPMETER_SANITIZE=ON -DOPMETER_WERROR=ON -DOPMETER_BENCH=OFF -DOPMETER_CUDA=OFF "${compiler_cache_args[@]}" >/dev/null
cmake --build build-sanitize -j"$(nproc)" --target opmeter_tests
ctest --test-dir build-sanitize --output-on-failure -j"$(nproc)" --label-exclude no_sanitize
