#!/usr/bin/env bash
# One command on a fresh machine: install, build, run every test.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh
ctest --test-dir build --output-on-failure -j"$(nproc)"
