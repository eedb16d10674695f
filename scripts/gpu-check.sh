#!/usr/bin/env bash
# Validates the CUDA backend on a machine with an NVIDIA GPU and writes raw results.
#   scripts/gpu-check.sh [BUNDLE.tar.xz | BUILD_DIR] [OUT_DIR] [STEP...]
# BUNDLE comes from scripts/bundle-gpu.sh (binaries + libraries, no CUDA); BUILD_DIR is a build
# made on this machine (default: build, configured and built if missing). OUT_DIR defaults to
# docs/results/<gpu-name>. STEPs (default: all, in this order): tests mltests quick peaks sweep
# sweep30 torch worker copy graph ml-ops ml-sweep linear attention cudnn pipeline-ops pipelines calibrate predict quant. Every step runs whatever the others did; each one's command, exit code and
# time go to OUT_DIR/commands.txt and OUT_DIR/steps.tsv, and the script exits 1 at the end if
# any step failed. GTEST_REPEAT (default 10) sets how often the GPU-side tests repeat.
set -uo pipefail
cd "$(dirname "$0")/.."
src=${1:-build}
if [[ "$src" == *.tar.xz ]]; then
  dir=$(mktemp -d)
  tar -C "$dir" -xJf "$src" || { echo "gpu-check: cannot unpack $src" >&2; exit 2; }
  bin="$dir/opmeter/bin"
  export LD_LIBRARY_PATH="$dir/opmeter/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
else
  [ -x "$src/opmeter" ] || { cmake -S . -B "$src" -DCMAKE_BUILD_TYPE=Release && cmake --build "$src" -j"$(nproc)"; }
  bin="$src"
fi
command -v nvidia-smi >/dev/null || { echo "gpu-check: nvidia-smi not found: no NVIDIA driver here" >&2; exit 2; }
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader -i 0 | tr ' ' '-' | tr -cd 'A-Za-z0-9_.-')
out=${2:-docs/results/$gpu}
shift $(( $# > 2 ? 2 : $# ))
steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(tests mltests quick peaks sweep sweep30 torch worker copy graph ml-ops ml-sweep linear
                                 attention cudnn pipeline-ops pipelines calibrate predict quant)
# The Python worker from this checkout (a bundle's binary knows only where it was built).
export OPMETER_WORKER=${OPMETER_WORKER:-$PWD/worker/opmeter_worker.py}
# cuDNN: PyTorch's copy first where PyTorch is installed (the version the headers here are from).
torch_cudnn=$(python3 -c 'import os, torch; print(os.path.dirname(torch.__file__) + "/lib")' 2>/dev/null) || torch_cudnn=
nvidia_cudnn=$(python3 -c 'import os, nvidia.cudnn as c; print(os.path.dirname(c.__file__) + "/lib")' 2>/dev/null) || nvidia_cudnn=
for d in "$torch_cudnn" "$nvidia_cudnn"; do
  [ -n "$d" ] && [ -e "$d/libcudnn.so.9" ] && export LD_LIBRARY_PATH="$d:$LD_LIBRARY_PATH"
done
mkdir -p "$out"
: > "$out/commands.txt"
: > "$out/stderr.txt"
printf 'step\texit\tseconds\n' > "$out/steps.tsv"
nvidia-smi -q > "$out/nvidia-smi.txt" 2>&1
opm="$bin/opmeter"
failed=0

# step NAME OUTFILE CMD...: runs CMD with its standard output in OUTFILE (its standard error,
# progress and warnings, goes to stderr.txt), records exit code and time.
step() {
  local name=$1 file=$2; shift 2
  echo "gpu-check: [$name] $*" | tee -a "$out/commands.txt"
  echo "=== [$name] $*" >> "$out/stderr.txt"
  local t0=$SECONDS rc=0
  "$@" > "$file" 2>> "$out/stderr.txt" || rc=$?
  printf '%s\t%s\t%s\n' "$name" "$rc" "$((SECONDS - t0))" >> "$out/steps.tsv"
  echo "gpu-check: [$name] exit $rc after $((SECONDS - t0)) s" | tee -a "$out/commands.txt"
  [ "$rc" -eq 0 ] || failed=1
}

# Hot GEMM sweep: every dtype x cuBLAS/cuBLASLt x 4096^3/8192^3 (24 cases, fp8 on cuBLAS skipped).
cat > "$out/sweep.yaml" <<'YAML'
ops: [gemm]
impls: [cublas, cublaslt]
device: cuda:0
hot: true
dtypes: [fp32, tf32, fp16, bf16, fp8, int8]
shapes: [{name: custom, shapes: [[4096, 4096, 4096], [8192, 8192, 8192]]}]
YAML
cat > "$out/peaks.yaml" <<'YAML'
ops: [peak]
device: cuda:0
dtypes: [fp32, tf32, fp16, bf16, fp8, int8]
YAML
cat > "$out/copy.yaml" <<'YAML'
ops: [bandwidth]
device: cuda:0
hot: true
bandwidth: {kernels: [copy, scale, add, triad, read, write], sizes_mib: [1024]}
YAML
# The worker's impls beside each other on the issue's memory-bound shape, and GEMMs beside cuBLASLt.
cat > "$out/worker-ops.yaml" <<'YAML'
ops: [layernorm, rmsnorm, softmax, gelu, silu, cross_entropy]
impls: [torch, torch_compile, triton]
device: cuda:0
dtypes: [bf16]
batch: [32]
seq: [1024]
hidden: [4096]
YAML
cat > "$out/worker-gemm.yaml" <<'YAML'
ops: [gemm]
impls: [torch, torch_compile, triton, cublaslt]
device: cuda:0
hot: true
dtypes: [bf16, fp8, int8]
shapes: [{name: custom, shapes: [[4096, 4096, 4096]]}]
YAML

for s in "${steps[@]}"; do
  case "$s" in
    tests)
      tests="$bin/opmeter_tests"; [ -x "$tests" ] || tests="$bin/tests/opmeter_tests"
      step tests "$out/gpu-tests.txt" "$tests" --gtest_repeat="${GTEST_REPEAT:-10}" --gtest_brief=1 \
        --gtest_filter='CudaDevice.*:CudaTiming.*:CudaCase.*:CudaPlan.*:CudaCeilings.*' ;;
    mltests)  # the ML-op sweeps over dtypes and widths, once (they are long)
      tests="$bin/opmeter_tests"; [ -x "$tests" ] || tests="$bin/tests/opmeter_tests"
      step mltests "$out/gpu-ml-tests.txt" "$tests" --gtest_brief=1 \
        --gtest_filter='ActivationCuda.*:NormCuda.*:LossCuda.*:LinearCuda.*:AttentionCuda.*:Cudnn.*:TransformerBlockCuda.*:AddOp.Cuda*:PoolOp.Cuda*:EmbeddingOp.Cuda*:SqueezeExciteCuda.*:DecodeAttentionCuda.*:ConvDepthwiseCuda.*' ;;
    quick) step quick "$out/quick.md" "$opm" run --suite quick --device cuda:0 --out "$out/quick" ;;
    peaks) step peaks "$out/peaks.md" "$opm" run "$out/peaks.yaml" --out "$out/peaks" ;;
    sweep) step sweep "$out/sweep.md" "$opm" run "$out/sweep.yaml" --out "$out/sweep" ;;
    sweep30) step sweep30 "$out/sweep30.md" "$opm" run "$out/sweep.yaml" --samples 30 --energy-window 0 --out "$out/sweep30" ;;
    torch)
      if python3 -c 'import torch' 2>/dev/null; then
        step torch "$out/torch.json" python3 bench/torch_reference.py
      else
        echo "gpu-check: [torch] skipped: python3 cannot import torch" | tee -a "$out/commands.txt"
      fi ;;
    worker)
      step worker-agreement "$out/worker-agreement.txt" env OPMETER_BIN="$opm" OPMETER_BENCH_BIN="$bin" bench/worker_agreement.sh cuda:0
      step worker-ops "$out/worker-ops.md" "$opm" run "$out/worker-ops.yaml" --out "$out/worker-ops"
      step worker-gemm "$out/worker-gemm.md" "$opm" run "$out/worker-gemm.yaml" --out "$out/worker-gemm" ;;
    copy)
      [ -x "$bin/cuda_copy_variants" ] && step copy-variants "$out/copy-variants.txt" "$bin/cuda_copy_variants" 1024
      step copy "$out/copy.md" "$opm" run "$out/copy.yaml" --out "$out/copy" ;;
    graph)
      # CUDA-graph per-launch time of a tiny kernel, and Nsight Compute's duration of the same kernel.
      step graph "$out/graph.md" "$opm" run --case 'bandwidth/cuda/fp32/kernel=copy,n=4096/device=cuda:0,graph=100,hot' --out "$out/graph"
      if command -v ncu >/dev/null; then
        step ncu "$out/ncu.txt" ncu --metrics gpu__time_duration.sum --profile-from-start off "$opm" run --profile --no-report \
          --case 'bandwidth/cuda/fp32/kernel=copy,n=4096/device=cuda:0,hot' --out "$out/ncu-run"
      fi ;;
    ml-ops) step ml-ops "$out/ml-ops.md" "$opm" run bench/gpu-ml-ops.yaml --out "$out/ml-ops" ;;
    ml-sweep)
      for f in bench/gpu-ml-ops-sweep/hidden-*.yaml; do
        n=$(basename "$f" .yaml)
        step "ml-sweep-$n" "$out/ml-sweep-$n.md" "$opm" run "$f" --out "$out/ml-sweep-$n"
      done ;;
    linear)
      step linear "$out/linear.md" "$opm" run bench/gpu-linear.yaml --out "$out/linear"
      step ln-linear "$out/ln-linear.md" "$opm" run bench/gpu-ln-linear.yaml --out "$out/ln-linear" ;;
    attention)
      step attention "$out/attention.md" "$opm" run bench/gpu-attention.yaml --out "$out/attention"
      step transformer-block "$out/transformer-block.md" "$opm" run bench/gpu-transformer-block.yaml --out "$out/transformer-block" ;;
    cudnn)
      for f in bench/gpu-cudnn.yaml bench/gpu-cudnn-conv.yaml bench/gpu-cudnn-batchnorm.yaml bench/gpu-conv-fusion.yaml; do
        n=$(basename "$f" .yaml)
        step "$n" "$out/$n.md" "$opm" run "$f" --out "$out/$n"
      done ;;
    pipeline-ops)  # the pipelines' own ops: depthwise convs, pooling, embedding, squeeze-excite, decode attention
      for f in bench/gpu-dwconv*.yaml bench/gpu-pool-embed/*.yaml bench/gpu-pipeline-ops.yaml; do
        n=$(basename "$f" .yaml)
        step "$n" "$out/$n.md" "$opm" run "$f" --out "$out/$n"
      done ;;
    pipelines)  # every built-in pipeline layer by layer beside PyTorch end to end (the issue's H100 targets)
      step pipelines-vision "$out/pipelines-vision.md" "$opm" run bench/gpu-pipelines.yaml --heat-max 1 --cooldown 0.2 --out "$out/pipelines-vision"
      step pipelines-opt "$out/pipelines-opt.md" "$opm" run bench/gpu-pipelines-opt.yaml --heat-max 1 --cooldown 0.2 --out "$out/pipelines-opt"
      step pipelines-small "$out/pipelines-small.md" "$opm" run bench/gpu-pipelines-small.yaml --heat-max 1 --cooldown 0.2 --out "$out/pipelines-small" ;;
    calibrate) step calibrate "$out/calibrate.txt" "$opm" calibrate --device cuda:0 --out "$out/calibration-cuda0.json" \
                 --results "$out/calibrate" ;;
    predict)  # a GEMM sweep, then opmeter predict's models fitted to it with their held-out error
      step predict-sweep "$out/predict-gemm.md" "$opm" run bench/predict/gemm-gpu.yaml --out "$out/predict-gemm"
      step predict-fit "$out/predict-fit.txt" "$opm" predict fit "$out/predict-gemm" -o "$out/predict-model.json" ;;
    quant)  # quantization recipes (cuda_quant) beside the bf16 cuBLASLt GEMM at M=1 and 16, and their tests
      tests="$bin/opmeter_tests"; [ -x "$tests" ] || tests="$bin/tests/opmeter_tests"
      step quant-tests "$out/gpu-quant-tests.txt" "$tests" --gtest_brief=1 --gtest_filter='QuantGpuPack.*:QuantLinearCuda.*'
      step quant "$out/quant.md" "$opm" run bench/quant/gpu-llama.yaml --out "$out/quant" ;;
    *) echo "gpu-check: unknown step '$s' (tests mltests quick peaks sweep sweep30 torch worker copy graph ml-ops ml-sweep" \
            "linear attention cudnn pipeline-ops pipelines calibrate predict quant)" >&2; failed=1 ;;
  esac
done
echo "gpu-check: done: raw results in $out"
column -t "$out/steps.tsv" 2>/dev/null || cat "$out/steps.tsv"
exit "$failed"
