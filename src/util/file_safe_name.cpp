#include "util/file_safe_name.hpp"

#include <cctype>
#include <cstdint>

#include <fmt/format.h>

namespace opmeter {
namespace {
constexpr std::size_t kMaxNameChars = 160;  // file systems take 255 bytes; room for suffixes

// FNV-1a: stable across runs and builds (std::hash is not), for names cut short.
std::uint64_t fnv1a(const std::string& s) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : s) h = (h ^ ch) * 1099511628211ull;
  return h;
}
}  // namespace

std::string file_safe_name(const std::string& name, char replacement) {
  std::string out;
  for (unsigned char ch : name)
    out += std::isalnum(ch) || ch == '.' || ch == '-' || ch == '_' || ch == '=' ? static_cast<char>(ch) : replacement;
  if (out.empty() || out[0] == '.') out.insert(out.begin(), '_');
  if (out.size() > kMaxNameChars) out = fmt::format("{}-{:016x}", out.substr(0, kMaxNameChars - 17), fnv1a(name));
  return out;
}

}  // namespace opmeter
