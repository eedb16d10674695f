#!/usr/bin/env bash
# The bench programs refuse bad arguments with a message naming them and exit code 2.
#   bench_args_test.sh BINARY   (bench/quant_int4_gemv, bench/amx_gemm, bench/attention_blocked_cpu_time or
#                                bench/cuda_cold_timing)
set -u
bin=$1
name=$(basename "$bin")
fail=0
expect() {  # expect "MESSAGE PART" ARGS...
  local want=$1; shift
  local out rc
  out=$("$bin" "$@" 2>&1); rc=$?
  if [ "$rc" -ne 2 ] || [[ "$out" != *"$want"* ]]; then
    echo "FAIL: $name $*: exit $rc, output: $out (wanted exit 2 and '$want')"
    fail=1
  fi
}
case "$name" in
  quant_int4_gemv)
    expect "N must be a positive whole number, got '0'" 0
    expect "K must be a positive whole number, got 'abc'" 64 abc
    expect "G must be a positive whole number, got '-64'" 64 128 -64
    expect "G must be a power of two dividing K (K=128, G=48)" 64 128 48
    expect "G must be a power of two dividing K (K=100, G=64)" 64 100 64
    expect "reps must be a positive whole number, got '1x'" 64 128 64 1x
    expect "M must be a positive whole number, got '0'" 64 128 64 10 0
    expect "usage: quant_int4_gemv [N K G reps M]" 1 2 3 4 5 6
    expect "no int4 recipe with group 16" 64 128 16
    ;;
  amx_gemm)
    expect "M must be a positive whole number, got '0'" 0
    expect "K must be a positive whole number, got 'abc'" 64 abc
    expect "N must be a positive whole number, got '-64'" 64 128 -64
    expect "reps must be a positive whole number, got '1x'" 64 128 64 1x
    expect "M, K and N must be multiples of 32 (M=48, K=64, N=64)" 48 64 64
    expect "usage: amx_gemm [M K N reps]" 32 32 32 1 9
    ;;
  cuda_cold_timing)
    expect "samples must be a whole number from 1 to 100000, got 'abc'" abc
    expect "samples must be a whole number from 1 to 100000, got '0'" 0
    expect "usage: cuda_cold_timing [samples]" 1 2
    ;;
  attention_blocked_cpu_time)
    expect "seq, head_dim and heads must be positive" 0
    expect "kernel must be amx_bf16, avx512_bf16, avx512, avx2 or base (not bogus)" 64 32 1 0 0 1 bogus
    ;;
  *) echo "FAIL: no argument cases for $name"; fail=1 ;;
esac
exit $fail
