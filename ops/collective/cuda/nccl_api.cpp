// Compiled where the toolkit has nccl.h (collective_nccl.cpp says why not otherwise).
#if __has_include(<nccl.h>)
#include "ops/collective/cuda/nccl_api.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <stdexcept>

#include <fmt/format.h>

namespace opmeter::collective {
namespace {

NcclApi load() {
  NcclApi api;
  const char* env = std::getenv("OPMETER_NCCL_LIBRARY");
  api.library = env && *env ? env : "libnccl.so.2";
  void* h = dlopen(api.library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    api.reason = fmt::format("NCCL does not load ({}; set OPMETER_NCCL_LIBRARY to libnccl.so.2's path)", dlerror());
    return api;
  }
  auto need = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(h, name));
    if (!fn && api.reason.empty()) api.reason = fmt::format("{} has no {}", api.library, name);
  };
  need(api.GetVersion, "ncclGetVersion");
  need(api.GetErrorString, "ncclGetErrorString");
  need(api.GetUniqueId, "ncclGetUniqueId");
  need(api.CommInitRank, "ncclCommInitRank");
  need(api.CommDestroy, "ncclCommDestroy");
  need(api.CommAbort, "ncclCommAbort");
  need(api.AllReduce, "ncclAllReduce");
  need(api.AllGather, "ncclAllGather");
  need(api.ReduceScatter, "ncclReduceScatter");
  need(api.Broadcast, "ncclBroadcast");
  need(api.Send, "ncclSend");
  need(api.Recv, "ncclRecv");
  need(api.GroupStart, "ncclGroupStart");
  need(api.GroupEnd, "ncclGroupEnd");
  api.AlltoAll = reinterpret_cast<decltype(api.AlltoAll)>(dlsym(h, "ncclAlltoAll"));
  if (api.reason.empty()) api.GetVersion(&api.version);
  return api;
}

}  // namespace

const NcclApi& NcclApi::get() {
  static const NcclApi api = load();
  return api;
}

void NcclApi::check(ncclResult_t r, const char* what) const {
  if (r != ncclSuccess) throw std::runtime_error(fmt::format("{}: {}", what, GetErrorString(r)));
}

}  // namespace opmeter::collective

#endif
