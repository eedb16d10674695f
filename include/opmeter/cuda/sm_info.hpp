#pragma once
// What opmeter's memory-bound kernels size their grids by: the SM count (grids of a few waves of
// resident blocks, looping over the rest) and the shared memory a block may opt in to.
#include <cstddef>

namespace opmeter::cuda {

struct SmInfo {
  int sms = 1;
  std::size_t smem_per_block_optin = 48 << 10;
};

}  // namespace opmeter::cuda
