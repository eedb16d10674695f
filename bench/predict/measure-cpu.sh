#!/usr/bin/env bash
# The measurements behind `opmeter predict`'s CPU benchmarks (docs/BENCHMARKS.md): a calibration
# profile, the GEMM sweep, the op sweeps a ResNet-50 prediction is fitted on (none of its layers),
# and ResNet-50 itself layer by layer. Usage: measure-cpu.sh OPMETER OUT_DIR. Every step runs
# even when one before it failed; the exit code says whether any did.
set -u
opmeter=${1:?usage: measure-cpu.sh OPMETER OUT_DIR}
out=${2:?usage: measure-cpu.sh OPMETER OUT_DIR}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
failed=0
step() {  # step NAME COMMAND...: runs it, logs it, notes a failure and goes on
  local name=$1; shift
  echo "== $name: $*" | tee -a "$out/commands.log"
  local t0=$SECONDS
  "$@" > "$out/$name.log" 2>&1 || { echo "   $name failed (exit $?)" | tee -a "$out/commands.log"; failed=1; }
  echo "   $name took $((SECONDS - t0)) s" | tee -a "$out/commands.log"
}
step calibrate "$opmeter" calibrate --quick --out "$out/calibration.json" --results "$out/calibrate"
for cfg in gemm-cpu conv-k1 conv-k3 conv-k7 conv-grid-k1 conv-grid-k3 conv-grid-k7 elementwise pool-linear; do
  step "$cfg" "$opmeter" run "$here/$cfg.yaml" --out "$out/$cfg" --no-report
done
step resnet50 "$opmeter" run --pipeline resnet50 --out "$out/resnet50" --max-noise 2 --no-report
exit $failed
