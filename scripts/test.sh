#!/usr/bin/env bash
# One command on a fresh machine: install, build, run every test; then every test again under the
# sanitizers (scripts/test-sanitize.sh; OPMETER_SKIP_SANITIZE=1 skips that).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh
ctest --test-dir build --output-on-failure -j"$(nproc)"
if [ "${OPMETER_SKIP_SANITIZE:-0}" != 1 ]; then ./scripts/test-sanitize.sh; fi
