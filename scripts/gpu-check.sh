#!/usr/bin/env bash
# Validates the CUDA backend on a machine with an NVIDIA GPU and writes raw results.
#   scripts/gpu-check.sh [BUNDLE.tar.xz | BUILD_DIR] [OUT_DIR] [PRESET | STEP...]
# BUNDLE comes from scripts/bundle-gpu.sh (binaries + libraries, no CUDA), unpacked once per
# machine into $TMPDIR/opmeter-bundle-<its hash> and reused by later calls; BUILD_DIR is a build
# made on this machine (default: build, configured and built if missing). OUT_DIR defaults to
# docs/results/<gpu-name>. docs/gpu-validation.md gives a lent GPU session's whole sequence.
# PRESETs fit one device call of at most 10 minutes each (default: triage):
#   triage         opmeter check --device cuda:0 (the whole matrix but torch.compile's; resumed where an earlier call
#                  of the same build stopped), the GPU-side tests once, compute-sanitizer on the
#                  riskiest tiny cases, graph mode on one own-kernel, one cuDNN, one quantized and
#                  one transformer_block case, two NCCL collectives on one rank
#   ops            ML ops beside torch / torch.compile / Triton, the copy ceiling
#   fusion         linear epilogues, attention (cuda, cudnn, cuda_unfused, torch SDPA), cuDNN conv,
#                  transformer_block
#   models         pipelines beside PyTorch end to end
#   quant-decode   Nsight Compute on the weight-only decode kernel (instructions per SASS line, and
#                  tinygemm's; throughput, occupancy and stall reasons beside cuBLASLt's GEMM), the
#                  quantized linears at M=1 in graph mode over rotating weight copies, with the
#                  kernel's own split of K beside forced ones, then at M=1/16 one call a sample,
#                  beside cuBLASLt bf16 and PyTorch's kernels
#   predict        the GPU GEMM sweep for the predictor, and the models fitted to it
#   train          float8 and bf16 training steps of linear beside PyTorch autograd; transformer_block's
#                  training step (cuda_train) beside autograd
#   quant-block    the quantized transformer_block (cuda_quant) beside the bf16 block
#   compile        opmeter check of the torch.compile impls (left out of triage's check: each case
#                  compiles), resumed where an earlier call of the same build stopped
# Each preset step has a time budget (a `timeout` that interrupts opmeter, which keeps what it
# finished) and the preset a total of PRESET_BUDGET_S (default 520 s), so a preset never outlasts
# its call; after every step the raw results are packed into ONE file,
# PACK (default: $OUT/gpu-check-<preset>.tar.gz where $OUT is set, else OUT_DIR.tar.gz).
# STEPs (any of them, in any order, no budget): tests mltests mltests-sweeps quick peaks sweep sweep30 torch worker
# copy graph ml-ops ml-sweep linear attention cudnn pipeline-ops pipelines calibrate predict cold-timing quant-sass quant-ncu quant-graph quant-ksplit quant
# fp8-train block-train quant-block check check-compile sanitize graph-cases collectives collectives-quick. Every step runs whatever the others
# did; each one's command, exit code
# and time go to OUT_DIR/commands.txt and OUT_DIR/steps.tsv, and the script exits 1 at the end if
# any step failed (124: stopped by its budget). GTEST_REPEAT (default 10, in presets 1) sets how
# often the GPU-side tests repeat; the test steps print each test as it starts, line by line
# (stdbuf), so a step stopped by its budget shows which test was running.
# `check` resumes OUT_DIR/check when the same build (bundle or binaries) wrote it, so a triage
# repeated on a warm machine checks only what is left; CHECK_FROM=DIR (a check folder from an
# earlier call's pack) seeds it on a fresh machine.
set -uo pipefail
cd "$(dirname "$0")/.."
src=${1:-build}
# What the check folder is tied to: a check resumes only the verdicts of this same build.
if [[ "$src" == *.tar.xz ]]; then
  build_id=$(sha256sum < "$src")
  build_id=${build_id%% *}
  # Unpacked once per bundle: a later call on the same machine (a warm one) reuses it. The folder
  # is this user's own, not a link; it is unpacked privately and moved into place whole.
  dir="${TMPDIR:-/tmp}/opmeter-bundle-${build_id:0:16}"
  if [ -L "$dir" ] || { [ -e "$dir" ] && [ ! -O "$dir" ]; }; then
    echo "gpu-check: $dir is a link or another user's: not used" >&2
    dir=$(mktemp -d)
  fi
  if [ ! -x "$dir/opmeter/bin/opmeter" ]; then
    part=$(mktemp -d)
    tar -C "$part" -xJf "$src" || { echo "gpu-check: cannot unpack $src" >&2; exit 2; }
    if [ -d "$dir" ]; then rm -rf "$dir/opmeter" && mv "$part/opmeter" "$dir/" && rmdir "$part"
    else mv "$part" "$dir"
    fi
  else
    echo "gpu-check: the bundle unpacked in $dir by an earlier call" >&2
  fi
  bin="$dir/opmeter/bin"
  export LD_LIBRARY_PATH="$dir/opmeter/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
else
  [ -x "$src/opmeter" ] || { cmake -S . -B "$src" -DCMAKE_BUILD_TYPE=Release && cmake --build "$src" -j"$(nproc)"; }
  bin="$src"
  build_id=$(cat "$bin/opmeter" "$bin"/*.so 2>/dev/null | sha256sum)
  build_id=${build_id%% *}
fi
# Line-buffered output for the GoogleTest steps: a test binary stopped by its budget keeps its log.
linebuf=(); command -v stdbuf >/dev/null && linebuf=(stdbuf -oL -eL)
command -v nvidia-smi >/dev/null || { echo "gpu-check: nvidia-smi not found: no NVIDIA driver here" >&2; exit 2; }
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader -i 0 | tr ' ' '-' | tr -cd 'A-Za-z0-9_.-')
out=${2:-docs/results/$gpu}
shift $(( $# > 2 ? 2 : $# ))
steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(triage)

# PRESET -> "STEP:SECONDS ..." (budgets from earlier H100 runs: docs/results/NVIDIA-H100-80GB-HBM3,
# and triage's from the H200's: docs/results/NVIDIA-H200/2026-11-26-triage, where check and the ML
# tests outran 200 s and 100 s; check resumes in the next call, the tests are split in two; their
# sum stays under PRESET_BUDGET_S, which also caps the whole preset). 2026-11-27b-triage took
# check 101 s, tests 28, mltests 143 and sanitize 72; mltests-sweeps, 189 s in 2026-11-27-sw, has
# been cut since in its activation and wide-row cases (tests/gpu_op_sweep.hpp). In 2026-11-27c,
# with cuDNN's attention running, check took 119 s, tests 39, mltests 170, mltests-sweeps 78 and
# sanitize 77; graph-cases have taken up to 20 s and collectives-quick 8 (check resumes where cut).
declare -A presets=(
  [triage]="check:108 tests:40 mltests:180 mltests-sweeps:82 sanitize:78 graph-cases:22 collectives-quick:10"
  [ops]="copy:100 ml-ops:250 worker:160"
  [fusion]="linear:150 attention:200 cudnn:160"
  [models]="pipeline-ops:100 pipelines:410"
  [quant-decode]="quant-sass:75 quant-ncu:70 quant-graph:100 quant-ksplit:145 quant:130"
  [predict]="predict:500"
  [compile]="check-compile:500"
  [train]="fp8-train:260 block-train:250"
  [quant-block]="quant-block:500"
)
preset=
if [ ${#steps[@]} -eq 1 ] && [ -n "${presets[${steps[0]}]:-}" ]; then
  preset=${steps[0]}
  read -r -a steps <<<"${presets[$preset]}"
  export GTEST_REPEAT=${GTEST_REPEAT:-1}
fi
label=${preset:-steps}
if [ -n "${PACK:-}" ]; then pack=$PACK
elif [ -n "${OUT:-}" ]; then pack="$OUT/gpu-check-$label.tar.gz"
else pack="${out%/}.tar.gz"
fi
preset_end=$((SECONDS + ${PRESET_BUDGET_S:-520}))
deadline=  # the current budgeted step's end (SECONDS), empty: no budget
# The Python worker from this checkout (a bundle's binary knows only where it was built).
export OPMETER_WORKER=${OPMETER_WORKER:-$PWD/worker/opmeter_worker.py}
# The tests read configs and fixtures from this checkout, wherever the GPU machine put it.
export OPMETER_TEST_SOURCE_DIR=${OPMETER_TEST_SOURCE_DIR:-$PWD}
# cuDNN: PyTorch's copy first where PyTorch is installed (the version the headers here are from):
# in torch/lib, or in the nvidia-cudnn wheel, whose `nvidia` is a namespace package: only its
# __path__ says where (its __file__ is None). The H200's third session, asking __file__, loaded the
# system's 9.14.
torch_cudnn=$(python3 -c 'import os, torch; print(os.path.dirname(torch.__file__) + "/lib")' 2>/dev/null) || torch_cudnn=
nvidia_cudnn=$(python3 -c 'import nvidia.cudnn as c; print(list(c.__path__)[0] + "/lib")' 2>/dev/null) || nvidia_cudnn=
for d in "$torch_cudnn" "$nvidia_cudnn"; do
  if [ -n "$d" ] && [ -e "$d/libcudnn.so.9" ]; then
    export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    echo "gpu-check: cuDNN from $d (first in LD_LIBRARY_PATH)" >&2
  fi
done
# NCCL (the nccl collectives load libnccl.so.2 at run time): the toolkit's, else the nvidia-nccl wheel's.
if [ -z "${OPMETER_NCCL_LIBRARY:-}" ]; then
  nvidia_nccl=$(python3 -c 'import os, nvidia.nccl as n; print(list(n.__path__)[0] + "/lib")' 2>/dev/null) || nvidia_nccl=
  for f in /usr/local/cuda/lib64/libnccl.so.2 /usr/local/cuda/lib/libnccl.so.2 "$nvidia_nccl/libnccl.so.2"; do
    [ -e "$f" ] && { export OPMETER_NCCL_LIBRARY=$f; break; }
  done
fi
mkdir -p "$out"
: > "$out/commands.txt"
: > "$out/stderr.txt"
printf 'step\texit\tseconds\n' > "$out/steps.tsv"
nvidia-smi -q > "$out/nvidia-smi.txt" 2>&1
opm="$bin/opmeter"
# A bench program's path: beside opmeter in a bundle, under bench/ in a build folder.
bench_program() {
  local d
  for d in "$bin" "$bin/bench"; do [ -x "$d/$1" ] && { echo "$d/$1"; return 0; }; done
  return 1
}
failed=0

# Packs OUT_DIR into the one file that comes back from a device call (rewritten after each step,
# so that a call stopped early still returns what was finished).
pack_results() {
  mkdir -p "$(dirname "$pack")"
  tar -czf "$pack.part" -C "$(dirname "$out")" "$(basename "$out")" 2>/dev/null && mv -f "$pack.part" "$pack"
}

# step NAME OUTFILE CMD...: runs CMD with its standard output in OUTFILE (its standard error,
# progress and warnings, goes to stderr.txt), records exit code and time. Within a preset, CMD gets
# what is left of its step's budget: SIGTERM then (opmeter keeps what it finished), SIGKILL 10 s
# later; exit 124 says so. (Not SIGINT: a command started in the background, as steps are, ignores
# it unless it sets its own handler, as opmeter does and the test binary and Python do not.)
# A step whose budget is spent is skipped.
step() {
  local name=$1 file=$2; shift 2
  local limit=()
  if [ -n "$deadline" ]; then
    local left=$((deadline - SECONDS))
    if [ "$left" -le 0 ]; then
      echo "gpu-check: [$name] skipped: its budget is spent" | tee -a "$out/commands.txt"
      printf '%s\tskipped\t0\n' "$name" >> "$out/steps.tsv"
      return
    fi
    limit=(timeout -s TERM -k 10 "$left")
  fi
  echo "gpu-check: [$name] $*" | tee -a "$out/commands.txt"
  echo "=== [$name] $*" >> "$out/stderr.txt"
  local t0=$SECONDS rc=0
  step_name=$name step_t0=$t0
  "${limit[@]}" "$@" > "$file" 2>> "$out/stderr.txt" &
  step_pid=$!
  wait "$step_pid" || rc=$?
  step_pid=
  printf '%s\t%s\t%s\n' "$name" "$rc" "$((SECONDS - t0))" >> "$out/steps.tsv"
  echo "gpu-check: [$name] exit $rc after $((SECONDS - t0)) s" | tee -a "$out/commands.txt"
  [ "$rc" -eq 0 ] || failed=1
  pack_results
  return "$rc"
}

# Stopped from outside (SIGINT or SIGTERM: a `timeout` around this script): the running step and
# its children get SIGTERM (opmeter keeps what it finished; a test log keeps its lines), SIGKILL
# 3 s later, and what is finished is packed before exiting 124. Steps run in the background so
# that the signal is handled at once (bash runs a trap only after a foreground child ends); give
# the outer timeout's -k at least 10 s. Before, a step cut this way was lost with the pack.
step_pid= step_name= step_t0=0
on_stop() {
  trap - INT TERM
  echo "gpu-check: stopped from outside: packing what is finished" | tee -a "$out/commands.txt" >&2
  if [ -n "$step_pid" ]; then
    pkill -TERM -P "$step_pid" 2>/dev/null
    kill -TERM "$step_pid" 2>/dev/null
    for _ in 1 2 3; do kill -0 "$step_pid" 2>/dev/null || break; sleep 1; done
    kill -KILL "$step_pid" 2>/dev/null
    printf '%s\tstopped\t%s\n' "$step_name" "$((SECONDS - step_t0))" >> "$out/steps.tsv"
  fi
  pack_results
  exit 124
}
trap on_stop INT TERM

# ncu_case NAME N CASE NCU_ARGS...: step NAME-N, Nsight Compute (the card's clocks left alone) on
# one opmeter case: 10 samples measured, then one untimed in the capture range (--profile). 1 where
# ncu cannot profile on this machine at all: the caller skips its other cases.
ncu_case() {
  local name=$1 n=$2 kase=$3; shift 3
  step "$name-$n" "$out/$name-$n.txt" ncu --clock-control none --profile-from-start off "$@" \
    "$opm" run --profile --samples 10 --energy-window 0 --cooldown 0 --no-report --case "$kase" --out "$out/$name-$n"
  if tool_refused "$out/$name-$n.txt"; then
    echo "gpu-check: [$name] ncu cannot profile on this machine (see $name-$n.txt): the other cases skipped" |
      tee -a "$out/commands.txt"
    return 1
  fi
}

# sass_page N: quant-sass-N's report as its source page in SASS (--print-source, Nsight Compute
# 2023.3 on), or an older ncu's default view.
sass_page() {
  local r="$out/quant-sass-$1.ncu-rep"
  [ -f "$r" ] || return 0
  step "quant-sass-$1-source" "$out/quant-sass-$1.csv" ncu --import "$r" --page source --print-source sass --csv ||
    step "quant-sass-$1-page" "$out/quant-sass-$1-page.csv" ncu --import "$r" --page source --csv
}

# tool_refused FILE: whether a profiler's or sanitizer's step could not use the GPU at all (as on
# gVisor machines: "Failed to initialize the profiler: LibraryNotLoaded", "Device not supported"),
# in its output or in what it added to stderr.txt; the next such steps would only waste the call.
tool_refused() {
  local pattern='LibraryNotLoaded|Failed to initialize the profiler|Device not supported|ERR_NVGPUCTRPERM'
  grep -qE "$pattern" "$1" 2>/dev/null || tail -n 40 "$out/stderr.txt" | grep -qE "$pattern"
}

# gtest_step NAME OUTFILE FILTER [ARGS...]: the GPU-side GoogleTests FILTER selects, each test
# named as it starts (no --gtest_brief) and every line written at once.
gtest_step() {
  local name=$1 file=$2 filter=$3; shift 3
  local tests="$bin/opmeter_tests"; [ -x "$tests" ] || tests="$bin/tests/opmeter_tests"
  step "$name" "$file" "${linebuf[@]}" "$tests" --gtest_filter="$filter" "$@"
}

# check_step NAME [ARGS...]: opmeter check --device cuda:0 ARGS into OUT_DIR/NAME, resuming what
# this build checked there before (or CHECK_FROM's, for `check`); a check of another build, or one
# opmeter refuses to resume (another GPU model: exit 2), is moved to NAME-previous and starts afresh.
check_step() {
  local name=$1; shift
  local dir="$out/$name" rc=2
  if [ "$name" = check ] && [ ! -f "$dir/check.json" ] && [ -n "${CHECK_FROM:-}" ] && [ -f "$CHECK_FROM/check.json" ]; then
    mkdir -p "$dir" && cp "$CHECK_FROM/check.json" "$dir/" && cp "$CHECK_FROM/build.sha256" "$dir/" 2>/dev/null
  fi
  if [ -f "$dir/check.json" ] && [ "$(cat "$dir/build.sha256" 2>/dev/null)" = "$build_id" ]; then
    step "$name" "$out/$name.txt" "$opm" check --resume "$dir"
    rc=$?
  fi
  [ "$rc" -eq 2 ] || return 0
  if [ -d "$dir" ]; then
    echo "gpu-check: [$name] $dir is not this build's check: moved to $name-previous" | tee -a "$out/commands.txt"
    rm -rf "$out/$name-previous" && mv "$dir" "$out/$name-previous"
  fi
  mkdir -p "$dir" && echo "$build_id" > "$dir/build.sha256"
  step "$name" "$out/$name.txt" "$opm" check --device cuda:0 "$@" -o "$dir"
}
# run_or_resume NAME CONFIG [ARGS...]: opmeter run CONFIG into OUT_DIR/NAME, or, where an earlier
# call of this build left results there, --resume them: a preset repeated on a warm machine (or
# seeded from an earlier call's pack) measures what is left, not the same first cases again.
run_or_resume() {
  local name=$1 config=$2; shift 2
  local dir="$out/$name"
  if [ -s "$dir/results.jsonl" ] && [ "$(cat "$dir.build.sha256" 2>/dev/null)" = "$build_id" ]; then
    step "$name" "$out/$name.md" "$opm" run "$config" "$@" --resume "$dir"
  else
    rm -rf "$dir" && echo "$build_id" > "$dir.build.sha256"
    step "$name" "$out/$name.md" "$opm" run "$config" "$@" --out "$dir"
  fi
}
# torch.compile's impls compile (and max-autotune tunes) every case: minutes for the 99 of them,
# so triage's check leaves them (--exclude) to `check-compile` (preset compile).
compile_impls='^[^/]+/torch_compile'

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

# NCCL's collectives: every kind, dtype and form on one rank (the GPU test), then a run with
# energy per collective; on N visible GPUs also `mpirun -np N` (one process per GPU), where mpirun is.
cat > "$out/collectives.yaml" <<'YAML'
ops: [collective]
impls: [nccl]
device: cuda:0
dtypes: [fp32, bf16]
kind: [allreduce, allgather, reduce_scatter, alltoall, broadcast, sendrecv]
bytes: [1048576, 67108864]
inplace: [0, 1]
stopping: {samples: 10, warmup: 5}
YAML
cat > "$out/collectives-quick.yaml" <<'YAML'
ops: [collective]
impls: [nccl]
device: cuda:0
dtypes: [bf16]
kind: [allreduce, alltoall]
bytes: [16777216]
inplace: [0]
stopping: {samples: 10, warmup: 5}
YAML
ngpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')

# Graph mode (one CUDA graph of back-to-back launches, the capture path) on one case of each kind.
graph_cases=(
  'layernorm/cuda/bf16/batch=1,seq=512,hidden=4096/device=cuda:0,graph=20'
  'conv2d/cudnn_nhwc/fp16/batch=1,channels=8,out_channels=8,image=8,kernel=3,stride=1,padding=1,groups=1,bn=0,act=relu/device=cuda:0,graph=20'
  'linear/cuda_quant/bf16/batch=1,seq=16,hidden=4096,out=4096,act=none,quant=int4wo-64/device=cuda:0,graph=20'
  'transformer_block/cuda/bf16/batch=1,seq=128,hidden=1024,heads=16,mlp=0,act=gelu,causal=1/device=cuda:0,graph=5'
)

if [ -n "$preset" ]; then
  echo "gpu-check: preset $preset: ${steps[*]} (at most ${PRESET_BUDGET_S:-520} s); results packed into $pack" |
    tee -a "$out/commands.txt"
fi
for entry in "${steps[@]}"; do
  s=${entry%%:*}
  if [ -n "$preset" ]; then
    deadline=$((SECONDS + ${entry#*:}))
    [ "$deadline" -le "$preset_end" ] || deadline=$preset_end
  fi
  case "$s" in
    check) check_step check --exclude "$compile_impls" ;;
    check-compile) check_step check-compile --filter "$compile_impls" ;;
    sanitize)  # compute-sanitizer (memcheck, racecheck) on the riskiest kernels' tiny cases, as opmeter lists them
      step sanitize-commands "$out/sanitize-commands.txt" "$opm" check --sanitize
      n=0
      while IFS= read -r line; do
        [[ "$line" == compute-sanitizer* ]] || continue
        n=$((n + 1))
        step "sanitize-$n" "$out/sanitize-$n.txt" bash -c "cd \"\$1\" && $line" sanitize "$out"
        if tool_refused "$out/sanitize-$n.txt"; then
          echo "gpu-check: [sanitize] compute-sanitizer cannot run on this machine (see sanitize-$n.txt): the others skipped" |
            tee -a "$out/commands.txt"
          break
        fi
      done < "$out/sanitize-commands.txt" ;;
    graph-cases)
      for c in "${graph_cases[@]}"; do
        n="graph-${c%%/*}-$(cut -d/ -f2 <<<"$c")"
        step "$n" "$out/$n.md" "$opm" run --case "$c" --out "$out/$n"
      done ;;
    tests) gtest_step tests "$out/gpu-tests.txt" 'CudaDevice.*:CudaTiming.*:CudaCase.*:CudaPlan.*:CudaCeilings.*' \
             --gtest_repeat="${GTEST_REPEAT:-10}" ;;
    mltests)  # the ML ops' fused and library kernels once: linear (inference, training, quantized), attention, cuDNN, transformer_block
      gtest_step mltests "$out/gpu-ml-tests.txt" \
        'LinearCuda.*:LinearTrainCuda.*:QuantLinearCuda.*:AttentionCuda.*:Cudnn.*:TransformerBlockCuda.*:DecodeAttentionCuda.*' ;;
    mltests-sweeps)  # our elementwise, norm and loss kernels over every dtype and width, and the pipelines' small ops
      gtest_step mltests-sweeps "$out/gpu-ml-sweep-tests.txt" \
        'ActivationCuda.*:NormCuda.*:LossCuda.*:AddOp.Cuda*:PoolOp.Cuda*:EmbeddingOp.Cuda*:SqueezeExciteCuda.*:ConvDepthwiseCuda.*' ;;
    collectives-quick) step collectives-quick "$out/collectives-quick.md" "$opm" run "$out/collectives-quick.yaml" \
                         --energy-window 1 --heat-max 1 --cooldown 0 --out "$out/collectives-quick" ;;
    collectives)
      gtest_step collectives-tests "$out/gpu-collectives-tests.txt" 'CollectiveNccl.*'
      step collectives "$out/collectives.md" "$opm" run "$out/collectives.yaml" --energy-window 1 --heat-max 2 \
        --out "$out/collectives"
      if [ "$ngpus" -gt 1 ] && command -v mpirun >/dev/null; then
        step "collectives-np$ngpus" "$out/collectives-np$ngpus.txt" mpirun -np "$ngpus" --allow-run-as-root \
          "$opm" run "$out/collectives.yaml" --energy-window 1 --heat-max 2 --no-report --out "$out/collectives-np$ngpus"
      else
        echo "gpu-check: [collectives] $ngpus GPU(s)$(command -v mpirun >/dev/null || echo ', no mpirun'): one rank only" |
          tee -a "$out/commands.txt"
      fi ;;
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
      variants=$(bench_program cuda_copy_variants) && step copy-variants "$out/copy-variants.txt" "$variants" 1024
      step copy "$out/copy.md" "$opm" run "$out/copy.yaml" --out "$out/copy" ;;
    graph)
      # CUDA-graph per-launch time of a tiny kernel, and Nsight Compute's duration of the same kernel.
      step graph "$out/graph.md" "$opm" run --case 'bandwidth/cuda/fp32/kernel=copy,n=4096/device=cuda:0,graph=100,hot' --out "$out/graph"
      if command -v ncu >/dev/null; then
        step ncu "$out/ncu.txt" ncu --clock-control none --metrics gpu__time_duration.sum --profile-from-start off "$opm" run --profile --samples 10 --energy-window 0 --cooldown 0 --no-report \
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
    cold-timing)  # cuBLASLt's M=1 product after a write flush, a read flush, back to back over weight copies, hot
      if cold=$(bench_program cuda_cold_timing); then
        step cold-timing "$out/cold-timing.txt" "$cold" 200
      else
        echo "gpu-check: [cold-timing] skipped: no cuda_cold_timing in $bin or $bin/bench (built with CUDA)" | tee -a "$out/commands.txt"
      fi ;;
    quant-ncu)  # Nsight Compute on the weight-only kernels at decode beside cuBLASLt's bf16 GEMM of the same shape
      # (throughput, occupancy, warp stalls): what bounds them, in one call.
      if command -v ncu >/dev/null; then
        # What each issued instruction waited for (cycles a warp spends stalled on each reason per
        # issue), and the instructions and DRAM bytes: the sections alone give no stall breakdown.
        ncu_stalls=smsp__inst_executed.sum,dram__bytes_read.sum
        for r in long_scoreboard short_scoreboard wait barrier mio_throttle lg_throttle math_pipe_throttle \
                 not_selected selected dispatch_stall no_instruction branch_resolving; do
          ncu_stalls+=",smsp__average_warps_issue_stalled_${r}_per_issue_active.ratio"
        done
        n=0
        for kase in 'linear/cuda_quant/bf16/batch=1,seq=1,hidden=8192,out=1280,act=none,quant=int4wo-64/device=cuda:0' \
                    'linear/cuda_quant/bf16/batch=1,seq=1,hidden=8192,out=1280,act=none,quant=int8wo/device=cuda:0' \
                    'linear/cublaslt/bf16/batch=1,seq=1,hidden=8192,out=1280,act=none/device=cuda:0' \
                    'linear/cuda_quant/bf16/batch=1,seq=1,hidden=1024,out=8192,act=none,quant=int4wo-64/device=cuda:0' \
                    'linear/cuda_quant/bf16/batch=1,seq=16,hidden=4096,out=4096,act=none,quant=int4wo-64/device=cuda:0' \
                    'linear/cuda_quant/bf16/batch=1,seq=1,hidden=8192,out=7168,act=none,quant=int4wo-64/device=cuda:0' \
                    'linear/cuda_quant/bf16/batch=1,seq=1,hidden=8192,out=7168,act=none,quant=int8wo/device=cuda:0' \
                    'linear/cublaslt/bf16/batch=1,seq=1,hidden=8192,out=7168,act=none/device=cuda:0'; do
          n=$((n + 1))
          ncu_case quant-ncu "$n" "$kase" --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy \
            --section LaunchStats --section WarpStateStats --section SchedulerStats --metrics "$ncu_stalls" || break
        done
      else
        echo "gpu-check: [quant-ncu] skipped: no ncu on this machine" | tee -a "$out/commands.txt"
      fi ;;
    quant-sass)  # Nsight Compute's instruction counts per SASS line of the decode kernel (ffn.w13, M=1):
      # where its instructions go (the H200's stall data: it issues ~6x cuBLASLt's for half the
      # bytes), which no tool on the development machine can disassemble; then PyTorch's tinygemm
      # on the same layer, the int4 kernel ours is compared with. The report files are kept
      # (ncu --import reads them again); each CSV is its source page.
      if command -v ncu >/dev/null; then
        profiled=1
        n=0
        for kase in 'linear/cuda_quant/bf16/batch=1,seq=1,hidden=8192,out=7168,act=none,quant=int8wo/device=cuda:0' \
                    'linear/cuda_quant/bf16/batch=1,seq=1,hidden=8192,out=7168,act=none,quant=int4wo-64/device=cuda:0'; do
          n=$((n + 1))
          ncu_case quant-sass "$n" "$kase" --section SourceCounters --section WarpStateStats -f -o "$out/quant-sass-$n" ||
            { profiled=0; break; }
          sass_page "$n"
        done
        if [ "$profiled" = 1 ]; then
          # tinygemm runs in the Python worker, a child process ncu follows; the worker marks no
          # profiling range, so the first launch named tinygemm is the one profiled.
          n=$((n + 1))
          step "quant-sass-$n" "$out/quant-sass-$n.txt" ncu --clock-control none --target-processes all \
            --kernel-name regex:tinygemm --launch-count 1 --section SourceCounters --section WarpStateStats \
            -f -o "$out/quant-sass-$n" "$opm" run --samples 3 --energy-window 0 --cooldown 0 --no-report \
            --case 'linear/torch_quant/bf16/batch=1,seq=1,hidden=8192,out=7168,act=none,quant=int4wo-64/device=cuda:0' \
            --out "$out/quant-sass-$n"
          sass_page "$n"
        fi
      else
        echo "gpu-check: [quant-sass] skipped: no ncu on this machine" | tee -a "$out/commands.txt"
      fi ;;
    quant-graph)  # M=1 in CUDA graphs of 32 launches over rotating weight copies (cold, no flush, no event pair each)
      run_or_resume quant-graph bench/quant/gpu-llama-graph.yaml --energy-window 0 --cooldown 0 ;;
    quant-ksplit)  # the decode kernel's split of K: its own choice beside forced splits, M=1 in graphs over weight copies
      run_or_resume quant-ksplit bench/quant/gpu-llama-ksplit.yaml --energy-window 0 --cooldown 0 ;;
    quant)  # quantization recipes (cuda_quant) beside the bf16 cuBLASLt GEMM at M=1 and 16, and their tests
      gtest_step quant-tests "$out/gpu-quant-tests.txt" 'QuantGpuPack.*:QuantLinearCuda.*'
      run_or_resume quant bench/quant/gpu-llama.yaml --energy-window 0 --cooldown 0 ;;
    fp8-train)  # float8 training (cublaslt_fp8_train): its GPU tests, then its step beside bf16's at 4096x8192x8192
      gtest_step fp8-train-tests "$out/gpu-fp8-train-tests.txt" 'LinearFp8TrainCuda.*'
      step fp8-train "$out/fp8-train.md" "$opm" run bench/train/gpu-fp8-4096x8192.yaml --out "$out/fp8-train" ;;
    block-train)  # transformer_block's training step (cuda_train): its GPU tests, then a 7B-sized block beside autograd
      gtest_step block-train-tests "$out/gpu-block-train-tests.txt" 'TransformerBlockCuda.Train*:LinearTrainCuda.*'
      step block-train "$out/block-train.md" "$opm" run bench/train/gpu-transformer-block.yaml --out "$out/block-train" ;;
    quant-block)  # the quantized transformer_block (cuda_quant) beside the bf16 block, decode and prefill
      gtest_step quant-block-tests "$out/gpu-quant-block-tests.txt" 'TransformerBlockCudaQuant.*'
      step quant-block "$out/quant-block.md" "$opm" run bench/quant/gpu-transformer-block.yaml --out "$out/quant-block" ;;
    *) echo "gpu-check: unknown step '$s' (presets: ${!presets[*]}; steps: tests mltests mltests-sweeps quick peaks sweep sweep30" \
            "torch worker copy graph ml-ops ml-sweep linear attention cudnn pipeline-ops pipelines calibrate predict" \
            "cold-timing quant-sass quant-ncu quant-graph quant-ksplit quant" \
            "fp8-train block-train quant-block check check-compile sanitize graph-cases collectives collectives-quick)" >&2; failed=1 ;;
  esac
done
pack_results
echo "gpu-check: done: raw results in $out, packed in $pack"
column -t "$out/steps.tsv" 2>/dev/null || cat "$out/steps.tsv"
exit "$failed"
