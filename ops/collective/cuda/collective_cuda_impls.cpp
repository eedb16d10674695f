// The collective impls of CUDA devices, each declared once (include/opmeter/cuda/cuda_impl.hpp):
// compiled into opmeter, which lists and plans them anywhere, and into the CUDA plugin, which
// makes them (collective_nccl.cpp). NCCL is loaded by the plugin at run time (nccl_api.hpp) and
// the ranks reach each other through opmeter's MPI communicator (src/scale/launch_comm.hpp), so
// the plugin links neither libnccl nor MPI: a machine without them keeps every other CUDA impl.
#include <fmt/format.h>

#include "opmeter/cuda/cuda_impl.hpp"
#include "ops/collective/collective.hpp"
#include "scale/launch_comm.hpp"
#include "scale/shard.hpp"

namespace opmeter::collective {
cuda::Factory nccl_factory();

namespace {

// What no device decides: the forms NCCL has, and a way to reach the other ranks.
Support nccl_supports(const Case& c) {
  const Kind k = kind_of(c);
  if (in_place(c) && (k == Kind::alltoall || k == Kind::sendrecv))
    return Support::no(fmt::format("NCCL's {} has no in-place form here (inplace=0)", kind_name(k)));
  auto shard = scale::shard_from_env(scale::process_env());
  if (shard && shard->size > 1 && !scale::launch_comm_available())
    return Support::no("NCCL across ranks needs opmeter built with MPI (rank 0 hands NCCL's id to the others by MPI_Bcast)");
  return Support::yes();
}

const cuda::CudaImplRegistrar reg_nccl({
    .op = "collective",
    .impl = "nccl",
    .summary = "NCCL's collectives on device buffers, one process per GPU (mpirun/srun; one rank runs alone)",
    .dtypes = {DType::fp32, DType::fp64, DType::fp16, DType::bf16},
    .supports = nccl_supports,
    .factory = OPMETER_CUDA_FACTORY(nccl_factory()),
});

}  // namespace
}  // namespace opmeter::collective
