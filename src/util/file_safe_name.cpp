#include "util/file_safe_name.hpp"

#include <cctype>
#include <cstdint>

#include <fmt/format.h>

#include "util/text.hpp"

namespace opmeter {
namespace {
constexpr std::size_t kMaxNameChars = 160;  // file systems take 255 bytes; room for suffixes
}  // namespace

std::string file_safe_name(const std::string& name, char replacement) {
  std::string out;
  for (unsigned char ch : name)
    out += std::isalnum(ch) || ch == '.' || ch == '-' || ch == '_' || ch == '=' ? static_cast<char>(ch) : replacement;
  if (out.empty() || out[0] == '.') out.insert(out.begin(), '_');
  if (out.size() > kMaxNameChars) out = fmt::format("{}-{:016x}", out.substr(0, kMaxNameChars - 17), stable_hash(name));
  return out;
}

}  // namespace opmeter
