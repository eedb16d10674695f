#pragma once
// Pieces of the self-contained HTML pages (the run report, the model report): data and code
// inlined into <script> elements safely.
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace opmeter {

// JSON inside <script>: no '<' at all, so neither </script> nor <!-- can end or confuse it.
std::string script_json(const nlohmann::json& j);
// A library's JS inline: "</script" cannot occur in it as code, only in strings and regexes,
// where "<\/script" means the same.
std::string inline_js(std::string_view js);

}  // namespace opmeter
