#!/usr/bin/env bash
# Does the worker protocol cost anything inside a sample? opmeter's `torch` impl beside the same
# call timed by torch.utils.benchmark in the same run, interleaved, 3 rounds, inputs reused (hot)
# in both; then the protocol's host cost per request. For docs/BENCHMARKS.md (issue 15).
# usage: [THREADS=N] bench/worker_agreement.sh [cpu|cuda:0]   (after scripts/build.sh; OPMETER_PYTHON picks
#        the Python with PyTorch, default python3)
set -euo pipefail
cd "$(dirname "$0")/.."
DEV=${1:-cpu}
PY=${OPMETER_PYTHON:-python3}
B=${OPMETER_BIN:-./build/opmeter}
RT=${OPMETER_BENCH_BIN:-./build/bench}/worker_round_trip
out=$(mktemp -d)
med() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
median_s() { "$PY" -c "import json,sys; print(json.loads(open(sys.argv[1]).readlines()[-1])['summary']['median_s'])" "$1"; }
if [ "$DEV" = cpu ]; then
  T=${THREADS:-$(nproc)}; where="threads=$T"
  cases=("layernorm fp32 32 512 768")
else
  T=1; where="device=$DEV"
  cases=("gemm bf16 4096 4096 4096" "layernorm bf16 32 1024 4096")
fi
for c in "${cases[@]}"; do
  read -r op dt a b d <<<"$c"
  key="$op-$dt-$a-$b-$d"
  if [ "$op" = gemm ]; then params="M=$a,N=$b,K=$d"; else params="batch=$a,seq=$b,hidden=$d"; fi
  for round in 1 2 3; do
    $B run --hot --case "$op/torch/$dt/$params/$where" --out "$out/$key-$round" --no-report >/dev/null 2>&1 || true
    median_s "$out/$key-$round/results.jsonl" >>"$out/$key.opmeter" || true
    "$PY" bench/torch_timer.py "$op" "$dt" "$a" "$b" "$d" --threads "$T" --device "$DEV" >>"$out/$key.torch" || true
  done
  o=$(med <"$out/$key.opmeter"); r=$(med <"$out/$key.torch")
  awk -v c="$op $dt $params" -v o="$o" -v r="$r" \
    'BEGIN { printf "%-40s opmeter torch %10.2f us   torch.utils.benchmark %10.2f us   ratio %.3f\n", c, o * 1e6, r * 1e6, o / r }'
done
OPMETER_PYTHON=$PY "$RT" 2000
