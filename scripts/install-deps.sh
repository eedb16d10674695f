#!/usr/bin/env bash
# Installs the Debian packages opmeter builds and tests with; does nothing for those already present.
set -euo pipefail
pkgs=(cmake g++ make pkg-config git
      libdnnl-dev libopenblas-dev libyaml-cpp-dev nlohmann-json3-dev libcli11-dev libfmt-dev
      libgtest-dev googletest likwid bc)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
