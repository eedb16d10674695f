#!/usr/bin/env bash
# Runs opmeter beside its references on this machine, interleaved, 3 rounds, for
# docs/BENCHMARKS.md: oneDNN fp32 2048^3 vs a standalone program; copy / triad vs likwid-bench
# (same total working set, same threads); best fp32 GEMM vs opmeter's own measured FMA peak.
# usage: bench/compare.sh [threads]   (after scripts/build.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
T=${1:-$(nproc)}
B=./build/opmeter
out=$(mktemp -d)
med() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
gf() { python3 -c "import json,sys; r=[json.loads(l) for l in open(sys.argv[1])]; print(r[-1]['$1'])" "$2"; }
# likwid-bench: S0:1GB is the total working set across all arrays (fp64 elements).
copy_n=$((1000000000 / 2 / 4)); triad_n=$((1000000000 / 3 / 4 / 16 * 16))
for round in 1 2 3; do
  OMP_NUM_THREADS=$T ./build/bench/onednn_standalone 2048 50 | awk '{print $(NF-1)}' >>"$out/standalone"
  $B run --case "gemm/onednn/fp32/M=2048,N=2048,K=2048/threads=$T" --out "$out/g$round" >/dev/null 2>&1 || true
  gf gflops "$out/g$round/results.jsonl" >>"$out/opmeter_gemm"
  $B run --case "peak/opmeter/fp32/kernel=fma/threads=$T" --out "$out/p$round" >/dev/null 2>&1 || true
  gf gflops "$out/p$round/results.jsonl" >>"$out/peak"
  likwid-bench -t copy_avx512 -w S0:1GB:$T 2>/dev/null | awk '/^MByte\/s/ {print $2/1000}' >>"$out/likwid_copy"
  $B run --case "bandwidth/opmeter/fp32/kernel=copy,n=$copy_n/threads=$T" --out "$out/c$round" >/dev/null 2>&1 || true
  gf gbps "$out/c$round/results.jsonl" >>"$out/opmeter_copy"
  likwid-bench -t stream_avx512 -w S0:1GB:$T 2>/dev/null | awk '/^MByte\/s/ {print $2/1000}' >>"$out/likwid_triad"
  $B run --case "bandwidth/opmeter/fp32/kernel=triad,n=$triad_n/threads=$T" --out "$out/t$round" >/dev/null 2>&1 || true
  gf gbps "$out/t$round/results.jsonl" >>"$out/opmeter_triad"
done
printf "%-34s %10s %10s %7s\n" "comparison ($T threads, median of 3)" opmeter reference ratio
row() { local a b; a=$(med <"$out/$2"); b=$(med <"$out/$3"); printf "%-34s %10.1f %10.1f %6.1f%%\n" "$1" "$a" "$b" "$(echo "100*$a/$b" | bc -l)"; }
row "onednn fp32 2048^3 GFLOP/s" opmeter_gemm standalone
row "onednn fp32 GEMM vs FMA peak" opmeter_gemm peak
row "copy GB/s vs likwid copy_avx512" opmeter_copy likwid_copy
row "triad GB/s vs likwid stream_avx512" opmeter_triad likwid_triad
echo "raw per round:"; for f in standalone opmeter_gemm peak likwid_copy opmeter_copy likwid_triad opmeter_triad; do echo "  $f: $(tr '\n' ' ' <"$out/$f")"; done
