#pragma once
// One communicator per device for the life of the process: made by the first case on the device,
// reused by every later one, released at exit. Making one is a collective call of every rank of
// the launch, so the ranks decide together: when any rank lacks one for its device, every rank
// makes a new one (releasing the one it had). Free of NCCL's types, so the tests run anywhere.
#include <cstddef>
#include <functional>
#include <map>
#include <utility>

namespace opmeter::collective {

template <class Comm>
class CommCache {
 public:
  // Releases a communicator: destroys it, or aborts it when an error may have left it broken.
  using Release = std::function<void(Comm, bool broken)>;
  // Whether any rank of the launch says yes (a vote every rank takes part in).
  using AnyRank = std::function<bool(bool)>;

  explicit CommCache(Release release) : release_(std::move(release)) {}
  ~CommCache() {
    for (auto& [device, comm] : comms_) release_(comm, false);
  }
  CommCache(const CommCache&) = delete;
  CommCache& operator=(const CommCache&) = delete;

  // The communicator of `device`: this rank's cached one when no rank lacks its own, else one
  // make() makes now (on every rank). Nothing is cached when make throws.
  Comm get(int device, const AnyRank& any_rank, const std::function<Comm()>& make) {
    auto it = comms_.find(device);
    const bool lacking = it == comms_.end();
    if (!any_rank(lacking) && !lacking) return it->second;  // every rank votes, always
    if (it != comms_.end()) {
      release_(it->second, false);
      comms_.erase(it);
    }
    Comm comm = make();
    comms_.emplace(device, comm);
    ++made_;
    return comm;
  }

  // After an error in a call on `device`'s communicator: aborted, so the next case makes another.
  void drop(int device) {
    auto it = comms_.find(device);
    if (it == comms_.end()) return;
    release_(it->second, true);
    comms_.erase(it);
  }

  std::size_t made() const { return made_; }    // how many were made (the first case of each device)
  std::size_t held() const { return comms_.size(); }

 private:
  Release release_;
  std::map<int, Comm> comms_;
  std::size_t made_ = 0;
};

}  // namespace opmeter::collective
