#!/usr/bin/env bash
# Packs what a GPU machine needs to run a build made here: the opmeter binary, its CUDA plugin,
# its cuDNN module (where the build has one), the test binary, and the non-system shared libraries
# they link (oneDNN, OpenBLAS, yaml-cpp, fmt, ...). CUDA libraries, cuDNN included, are left out:
# the GPU machine has the same toolkit, and libcudnn.so.9 (system or PyTorch's, through
# LD_LIBRARY_PATH); without it the cuDNN cases are skipped with the loader's reason. NCCL is not
# carried either: the nccl collectives load libnccl.so.2 at run time (the toolkit's, or the one
# gpu-check.sh finds); OpenMPI's libmpi, which opmeter links, is carried like any other library
# (enough for one rank; several ranks need the machine's own mpirun).
# Usage: scripts/bundle-gpu.sh [BUILD_DIR] [OUT.tar.xz]     (defaults: build, opmeter-gpu-bundle.tar.xz)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
out=${2:-opmeter-gpu-bundle.tar.xz}
[ -f "$build/libopmeter_cuda.so" ] || { echo "bundle-gpu: $build/libopmeter_cuda.so missing (build with the CUDA toolkit first)" >&2; exit 2; }
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/opmeter/bin" "$stage/opmeter/lib"
cp "$build/opmeter" "$build/libopmeter_cuda.so" "$stage/opmeter/bin/"
# The plugin loads its cuDNN module from beside itself.
[ -f "$build/libopmeter_cudnn.so" ] && cp "$build/libopmeter_cudnn.so" "$stage/opmeter/bin/"
# The test binary, and beside it the CLI it runs for its end-to-end tests (tests/test_paths.cpp).
for t in opmeter_tests opmeter_testbin; do
  [ -f "$build/tests/$t" ] && cp "$build/tests/$t" "$stage/opmeter/bin/"
done
for b in cuda_copy_variants cuda_cold_timing worker_round_trip; do
  [ -f "$build/bench/$b" ] && cp "$build/bench/$b" "$stage/opmeter/bin/"
done
# Shared libraries outside glibc and CUDA.
for f in "$stage"/opmeter/bin/*; do ldd "$f"; done | awk '/=> \// {print $3}' | sort -u |
  grep -vE '/(libc|libm|libdl|librt|libpthread|ld-linux[^/]*)\.so|/usr/local/cuda|libcuda\.so|libnvidia|libcudnn|libopmeter_' |
  while read -r lib; do cp -L "$lib" "$stage/opmeter/lib/"; done
# Their full symbol tables stay here: the dynamic ones (what plugins and backtraces use) are kept,
# and the bundle must fit the device call's 64 MiB beside the working tree.
strip --strip-unneeded "$stage"/opmeter/bin/* "$stage"/opmeter/lib/* 2>/dev/null || true
tar -C "$stage" -cJf "$out" opmeter
echo "bundle-gpu: $out ($(du -h "$out" | cut -f1)); on the GPU machine: scripts/gpu-check.sh $out"
