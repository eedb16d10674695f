#!/usr/bin/env bash
# Validates the CUDA backend on a machine with an NVIDIA GPU and writes raw results.
#   scripts/gpu-check.sh [BUNDLE.tar.xz | BUILD_DIR] [OUT_DIR]
# BUNDLE comes from scripts/bundle-gpu.sh (binaries + libraries, no CUDA); BUILD_DIR is a build
# made on this machine (default: build, configured and built if missing). OUT_DIR defaults to
# docs/results/<gpu-name>. Steps: the GPU-side tests, the quick suite on cuda:0, the performance
# cases beside the same operations in PyTorch (when importable), and Nsight Compute's time of a
# tiny kernel for the graph-mode comparison (when ncu works).
set -euo pipefail
cd "$(dirname "$0")/.."
src=${1:-build}
if [[ "$src" == *.tar.xz ]]; then
  dir=$(mktemp -d)
  tar -C "$dir" -xJf "$src"
  bin="$dir/opmeter/bin"
  export LD_LIBRARY_PATH="$dir/opmeter/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
else
  [ -x "$src/opmeter" ] || { cmake -S . -B "$src" -DCMAKE_BUILD_TYPE=Release && cmake --build "$src" -j"$(nproc)"; }
  bin="$src"
fi
command -v nvidia-smi >/dev/null || { echo "gpu-check: nvidia-smi not found: no NVIDIA driver here" >&2; exit 2; }
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader -i 0 | tr ' ' '-' | tr -cd 'A-Za-z0-9_.-')
out=${2:-docs/results/$gpu}
mkdir -p "$out"
log() { echo "gpu-check: $*" | tee -a "$out/commands.txt"; }
: > "$out/commands.txt"
nvidia-smi -q > "$out/nvidia-smi.txt"

tests="$bin/opmeter_tests"; [ -x "$tests" ] || tests="$bin/tests/opmeter_tests"
if [ -x "$tests" ]; then
  log "$tests --gtest_filter='CudaDevice.*:CudaTiming.*:CudaCase.*:CudaPlan.*:CudaCeilings.*'"
  "$tests" --gtest_filter='CudaDevice.*:CudaTiming.*:CudaCase.*:CudaPlan.*:CudaCeilings.*' 2>&1 | tee "$out/gpu-tests.txt"
fi

log "$bin/opmeter run --suite quick --device cuda:0 --out $out/quick"
"$bin/opmeter" run --suite quick --device cuda:0 --out "$out/quick" > "$out/quick.md" || true

# Performance goals, each beside PyTorch in the same run (hot: both sides reuse their inputs).
cat > "$out/perf.yaml" <<'YAML'
ops: [gemm, bandwidth]
impls: [cublaslt]
device: cuda:0
hot: true
dtypes: [bf16, fp8]
bandwidth: {kernels: [copy], sizes_mib: [1024]}
shapes: [{name: custom, shapes: [[8192, 8192, 8192]]}]
YAML
for round in 1 2 3; do
  log "$bin/opmeter run $out/perf.yaml --out $out/perf-$round"
  "$bin/opmeter" run "$out/perf.yaml" --out "$out/perf-$round" > "$out/perf-$round.md" || true
  if python3 -c 'import torch' 2>/dev/null; then
    log "python3 bench/torch_reference.py > $out/torch-$round.json"
    python3 bench/torch_reference.py > "$out/torch-$round.json" || true
  fi
done

# CUDA-graph per-launch time of a tiny kernel, and Nsight Compute's duration of the same kernel.
log "$bin/opmeter run --case 'bandwidth/cuda/fp32/kernel=copy,n=4096/device=cuda:0,graph=100,hot' --out $out/graph"
"$bin/opmeter" run --case 'bandwidth/cuda/fp32/kernel=copy,n=4096/device=cuda:0,graph=100,hot' --out "$out/graph" > "$out/graph.md" || true
if command -v ncu >/dev/null; then
  log "ncu --metrics gpu__time_duration.sum --profile-from-start off $bin/opmeter run --profile --case ..."
  ncu --metrics gpu__time_duration.sum --profile-from-start off "$bin/opmeter" run --profile --no-report \
    --case 'bandwidth/cuda/fp32/kernel=copy,n=4096/device=cuda:0,hot' --out "$out/ncu-run" > "$out/ncu.txt" 2>&1 || true
fi
log "done: raw results in $out"
