#!/usr/bin/env bash
# The CUDA plugin carries machine code for every architecture users have (issue 28):
#   tests/cuda_archs_test.sh PLUGIN.so
# Lists it with cuobjdump where the toolkit has it, else reads the fatbin's headers
# (tests/fatbin_archs.py). Exit 77 (skipped) when no plugin was built.
set -uo pipefail
so=${1:-}
[ -n "$so" ] && [ -f "$so" ] || { echo "skipped: no CUDA plugin built"; exit 77; }
if command -v cuobjdump >/dev/null; then
  listed=$(cuobjdump --list-elf "$so" | grep -o 'sm_[0-9]*a\?' | sort -u)
  ptx=$(cuobjdump --list-ptx "$so" | grep -o 'sm_[0-9]*a\?' | sed 's/sm_/compute_/' | sort -u)
  tool=cuobjdump
else
  all=$(python3 "$(dirname "$0")/fatbin_archs.py" "$so") || exit 1
  listed=$(grep '^sm_' <<<"$all")
  ptx=$(grep '^compute_' <<<"$all")
  tool=fatbin_archs.py
fi
echo "$tool: machine code for" $listed "; PTX for" $ptx
missing=0
for arch in 75 80 86 89 90 100 120; do
  grep -qx "sm_$arch" <<<"$listed" || { echo "missing: sm_$arch machine code"; missing=1; }
done
grep -qx "compute_120" <<<"$ptx" || { echo "missing: PTX of the newest architecture (compute_120)"; missing=1; }
exit $missing
