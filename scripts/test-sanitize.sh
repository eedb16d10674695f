#!/usr/bin/env bash
# The test suite again, built with AddressSanitizer + UndefinedBehaviorSanitizer and warnings as
# errors, in ./build-sanitize (at -O1, as AddressSanitizer recommends). That build has no CUDA
# plugin: the plugin is never instrumented (CMakeLists.txt), so compiling its kernels a second time
# would only cost CI minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-sanitize -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g" \
  -DOPMETER_SANITIZE=ON -DOPMETER_WERROR=ON -DOPMETER_BENCH=OFF -DOPMETER_CUDA=OFF >/dev/null
cmake --build build-sanitize -j"$(nproc)"
ctest --test-dir build-sanitize --output-on-failure -j"$(nproc)"
