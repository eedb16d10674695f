# Sourced by scripts/build.sh and scripts/test-sanitize.sh: sets `compiler_cache_args`, the CMake
# arguments that put ccache (scripts/install-deps.sh installs it) in front of the C, C++ and CUDA
# compilers, so that CI's clean clone recompiles only what changed since the last build on this
# machine. Without ccache they clear the launchers and the build goes on uncached.
# The cache is ccache's own ($HOME/.cache/ccache, capped at max_size: 5 GB unless ccache.conf
# says otherwise). Paths under this checkout are rewritten relative (base_dir) and the build
# directory is left out of the hash (hash_dir; only -g builds record it, in the debug info), so a
# clone at another path hits the same entries; nvcc goes through ccache like the host compilers.
launcher=$(command -v ccache || true)
compiler_cache_args=(-DCMAKE_C_COMPILER_LAUNCHER="$launcher" -DCMAKE_CXX_COMPILER_LAUNCHER="$launcher"
                     -DCMAKE_CUDA_COMPILER_LAUNCHER="$launcher")
if [ -n "$launcher" ]; then
  export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
fi
