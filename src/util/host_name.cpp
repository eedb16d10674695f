#include "util/host_name.hpp"

#include <unistd.h>

namespace opmeter {

std::string host_name() {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);  // truncated names still end in the zero left at the end
  return host;
}

}  // namespace opmeter
