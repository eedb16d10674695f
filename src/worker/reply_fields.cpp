#include "worker/reply_fields.hpp"

#include <fmt/format.h>

namespace opmeter::worker {
namespace {

const char* type_name(const nlohmann::json& v) {
  if (v.is_boolean()) return "a boolean";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "a list";
  if (v.is_object()) return "an object";
  return "null";
}

[[noreturn]] void wrong_type(const nlohmann::json& value, const char* key, const std::string& cmd,
                             const char* expected) {
  throw BadReply(fmt::format("the worker's reply to '{}' gives \"{}\": {} ({}), not {}", cmd, key,
                             short_json(value, 80), type_name(value), expected));
}

const nlohmann::json* field(const nlohmann::json& reply, const char* key) {
  if (!reply.is_object()) return nullptr;
  auto it = reply.find(key);
  return it == reply.end() ? nullptr : &*it;
}

}  // namespace

std::string short_json(const nlohmann::json& value, std::size_t chars) {
  std::string text = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return text.size() <= chars ? text : text.substr(0, chars) + "...";
}

std::optional<bool> bool_field(const nlohmann::json& reply, const char* key, const std::string& cmd) {
  const auto* v = field(reply, key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) wrong_type(*v, key, cmd, "true or false");
  return v->get<bool>();
}

std::optional<std::string> string_field(const nlohmann::json& reply, const char* key, const std::string& cmd) {
  const auto* v = field(reply, key);
  if (!v) return std::nullopt;
  if (!v->is_string()) wrong_type(*v, key, cmd, "a string");
  return v->get<std::string>();
}

std::optional<double> number_field(const nlohmann::json& reply, const char* key, const std::string& cmd) {
  const auto* v = field(reply, key);
  if (!v) return std::nullopt;
  if (!v->is_number()) wrong_type(*v, key, cmd, "a number");
  return v->get<double>();
}

double seconds_field(const nlohmann::json& reply, const char* key, const std::string& cmd) {
  auto s = number_field(reply, key, cmd);
  if (!s) throw BadReply(fmt::format("the worker's reply to '{}' gives no \"{}\"", cmd, key));
  // JSON has no NaN or infinity, but a huge integer reads as one, and a broken timer may say 0 or -1.
  if (!(*s > 0 && *s <= kLongestSeconds))
    throw BadReply(fmt::format("the worker sent {}={} for '{}': not a time in (0, {:g}] s", key,
                               short_json(reply.at(key), 40), cmd, kLongestSeconds));
  return *s;
}

}  // namespace opmeter::worker
