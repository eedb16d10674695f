#pragma once
// The fields of the worker's replies, read as the protocol types them (docs/worker-protocol.md).
// A field of another type is the worker's fault, said in opmeter's words: which reply, which
// field, what it held and what was expected (never the JSON library's own text).
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace opmeter::worker {

// Thrown for a reply that breaks the protocol: the case is `error` with this message.
struct BadReply : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// At most `chars` characters of the value as JSON (a reply may be megabytes).
std::string short_json(const nlohmann::json& value, std::size_t chars = 200);

// Field `key` of the reply to `cmd`: absent is nullopt, another type throws BadReply.
std::optional<bool> bool_field(const nlohmann::json& reply, const char* key, const std::string& cmd);
std::optional<std::string> string_field(const nlohmann::json& reply, const char* key, const std::string& cmd);
std::optional<double> number_field(const nlohmann::json& reply, const char* key, const std::string& cmd);

// The longest time a sample or a call may report: beyond it (about four months) it is garbage, as
// the results reader says of a stored sample.
inline constexpr double kLongestSeconds = 1e7;
// Field `key` of the reply to `cmd`, a time in (0, kLongestSeconds] seconds; anything else
// (missing, not a number, zero, negative, absurd) throws BadReply naming the value.
double seconds_field(const nlohmann::json& reply, const char* key, const std::string& cmd);

}  // namespace opmeter::worker
