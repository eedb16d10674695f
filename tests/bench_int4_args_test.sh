#!/usr/bin/env bash
# bench/quant_int4_gemv refuses bad arguments with a message naming them and exit code 2.
set -u
bin=$1
fail=0
expect() {  # expect "MESSAGE PART" ARGS...
  local want=$1; shift
  local out rc
  out=$("$bin" "$@" 2>&1); rc=$?
  if [ "$rc" -ne 2 ] || [[ "$out" != *"$want"* ]]; then
    echo "FAIL: quant_int4_gemv $*: exit $rc, output: $out (wanted exit 2 and '$want')"
    fail=1
  fi
}
expect "N must be a positive whole number, got '0'" 0
expect "K must be a positive whole number, got 'abc'" 64 abc
expect "G must be a positive whole number, got '-64'" 64 128 -64
expect "G must be a power of two dividing K (K=128, G=48)" 64 128 48
expect "G must be a power of two dividing K (K=100, G=64)" 64 100 64
expect "reps must be a positive whole number, got '1x'" 64 128 64 1x
expect "M must be a positive whole number, got '0'" 64 128 64 10 0
expect "usage: quant_int4_gemv [N K G reps M]" 1 2 3 4 5 6
expect "no int4 recipe with group 16" 64 128 16
exit $fail
