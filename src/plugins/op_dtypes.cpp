#include "plugins/op_dtypes.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "opmeter/errors.hpp"
#include "opmeter/registry.hpp"

namespace opmeter {

std::vector<DType> op_dtypes(const std::string& op) {
  const auto impls = Registry::global().impls_of(op);
  std::vector<DType> out;
  for (DType d : all_dtypes())
    if (std::any_of(impls.begin(), impls.end(), [&](const ImplDef* i) {
          return std::find(i->dtypes.begin(), i->dtypes.end(), d) != i->dtypes.end();
        }))
      out.push_back(d);
  return out;
}

void check_op_dtypes(const std::string& op, const std::vector<DType>& dtypes) {
  const auto forms = op_dtypes(op);
  std::vector<std::string> missing, names;
  for (DType d : all_dtypes())  // in one order, however the impl lists them
    if (std::find(dtypes.begin(), dtypes.end(), d) != dtypes.end() &&
        std::find(forms.begin(), forms.end(), d) == forms.end())
      missing.emplace_back(to_string(d));
  if (missing.empty()) return;
  for (DType d : forms) names.emplace_back(to_string(d));
  throw UsageError(fmt::format("{} has no {} form; its dtypes are {}", op, fmt::join(missing, " or "),
                               names.empty() ? std::string("none") : fmt::format("{}", fmt::join(names, ", "))));
}

}  // namespace opmeter
