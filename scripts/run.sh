#!/usr/bin/env bash
# One command on a fresh machine: install, build, run the default (quick) suite.
# Extra arguments go to `opmeter run` (e.g. --suite full, a config file, --threads 4).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh
exec ./build/opmeter run "$@"
