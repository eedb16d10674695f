// The plugin's table of CUDA impls: every declaration (include/opmeter/cuda/cuda_impl.hpp) compiled into the
// plugin or the cuDNN module adds itself here, factory included.
#include <map>
#include <mutex>
#include <utility>

#include "opmeter/cuda/cuda_impl.hpp"
#include "opmeter/cuda/device.hpp"

namespace opmeter::cuda {
namespace {

// Filled by static initializers (the plugin's at its load, the cuDNN module's at its load), read
// afterwards: the lock covers a module loaded while another thread looks an impl up.
std::mutex& table_mutex() {
  static std::mutex m;
  return m;
}
std::map<std::pair<std::string, std::string>, CudaImpl>& table() {
  static std::map<std::pair<std::string, std::string>, CudaImpl> t;
  return t;
}

}  // namespace

void add_to_plugin_table(CudaImpl impl) {
  std::lock_guard lock(table_mutex());
  auto key = std::make_pair(impl.op, impl.impl);
  table().insert_or_assign(std::move(key), std::move(impl));
}

const CudaImpl* find_impl(const std::string& op, const std::string& impl) {
  std::lock_guard lock(table_mutex());
  auto it = table().find({op, impl});
  return it == table().end() ? nullptr : &it->second;
}

std::vector<const CudaImpl*> plugin_impls() {
  std::lock_guard lock(table_mutex());
  std::vector<const CudaImpl*> out;
  for (auto& [key, impl] : table()) out.push_back(&impl);
  return out;
}

}  // namespace opmeter::cuda
