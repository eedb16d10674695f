#pragma once
// NCCL, loaded with dlopen on first use: the plugin neither links libnccl nor needs it to load,
// so a machine without libnccl.so.2 keeps every other CUDA impl and the nccl cases are `skipped`
// with the loader's reason. nccl.h (the CUDA toolkit's) gives the types and signatures.
#include <nccl.h>

#include <string>

namespace opmeter::collective {

struct NcclApi {
  decltype(&ncclGetVersion) GetVersion = nullptr;
  decltype(&ncclGetErrorString) GetErrorString = nullptr;
  decltype(&ncclGetUniqueId) GetUniqueId = nullptr;
  decltype(&ncclCommInitRank) CommInitRank = nullptr;
  decltype(&ncclCommDestroy) CommDestroy = nullptr;
  decltype(&ncclCommAbort) CommAbort = nullptr;
  decltype(&ncclAllReduce) AllReduce = nullptr;
  decltype(&ncclAllGather) AllGather = nullptr;
  decltype(&ncclReduceScatter) ReduceScatter = nullptr;
  decltype(&ncclBroadcast) Broadcast = nullptr;
  decltype(&ncclSend) Send = nullptr;
  decltype(&ncclRecv) Recv = nullptr;
  decltype(&ncclGroupStart) GroupStart = nullptr;
  decltype(&ncclGroupEnd) GroupEnd = nullptr;
  decltype(&ncclAlltoAll) AlltoAll = nullptr;  // NCCL 2.28 on; null before: grouped send/recv

  std::string reason;  // why NCCL cannot be used; empty when it can
  std::string library; // the file loaded
  int version = 0;     // NCCL_VERSION code of the library loaded

  // Loads $OPMETER_NCCL_LIBRARY, else libnccl.so.2, once per process.
  static const NcclApi& get();
  // Throws std::runtime_error("what: NCCL's message") unless r is ncclSuccess.
  void check(ncclResult_t r, const char* what) const;
};

}  // namespace opmeter::collective
