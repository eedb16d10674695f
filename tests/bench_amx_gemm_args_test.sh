#!/usr/bin/env bash
# bench/amx_gemm refuses bad arguments with a message naming them and exit code 2.
set -u
bin=$1
fail=0
expect() {  # expect "MESSAGE PART" ARGS...
  local want=$1; shift
  local out rc
  out=$("$bin" "$@" 2>&1); rc=$?
  if [ "$rc" -ne 2 ] || [[ "$out" != *"$want"* ]]; then
    echo "FAIL: amx_gemm $*: exit $rc, output: $out (wanted exit 2 and '$want')"
    fail=1
  fi
}
expect "M must be a positive whole number, got '0'" 0
expect "K must be a positive whole number, got 'abc'" 64 abc
expect "N must be a positive whole number, got '-64'" 64 128 -64
expect "reps must be a positive whole number, got '1x'" 64 128 64 1x
expect "M, K and N must be multiples of 32 (M=48, K=64, N=64)" 48 64 64
expect "usage: amx_gemm [M K N reps]" 32 32 32 1 9
exit $fail
