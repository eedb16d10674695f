#!/usr/bin/env bash
# Installs the Debian packages opmeter builds and tests with, and the chart libraries (npm) its
# HTML report bundles; does nothing for what is already present.
set -euo pipefail
cd "$(dirname "$0")/.."
# openmpi: sharded runs' tests (mpirun) and the collectives' mpi impls; jq: the sharded-run test reads journals.
# ccache: the compiler cache that scripts/build.sh and scripts/test-sanitize.sh use (compiler-cache.sh).
pkgs=(cmake g++ make pkg-config git ccache
      libdnnl-dev libopenblas-dev libyaml-cpp-dev nlohmann-json3-dev libcli11-dev libfmt-dev
      libgtest-dev googletest likwid bc
      libxgboost-dev libnlopt-dev libre2-dev
      python3-torch python3-numpy
      openmpi-bin libopenmpi-dev jq
      chromium)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# npm: the one on the PATH (Node's own package ships it) or Debian's.
command -v npm >/dev/null || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Node may come from elsewhere than Debian: an npm on the PATH is as good as the package.
# The chart libraries are pinned by web/package-lock.json and embedded into the binary at build.
if [ ! -f web/node_modules/.package-lock.json ] || [ web/package-lock.json -nt web/node_modules/.package-lock.json ]; then
  echo "installing the report's chart libraries (npm ci in web/)"
  (cd web && npm ci --no-audit --no-fund --loglevel=error)
fi
