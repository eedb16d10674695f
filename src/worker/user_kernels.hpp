#pragma once
// Users' Python kernels (`--kernel FILE[:NAME]`, a config's `kernels:`): the worker reads what the
// kernel declares (its op, dtypes, parameters) and opmeter registers it as an impl of that op, or
// of a new op of that name when opmeter has none.
#include <string>

namespace opmeter::worker {

// "FILE[:NAME]" with FILE made absolute: relative to `base_dir`, else to the working directory.
std::string absolute_kernel_spec(const std::string& spec, const std::string& base_dir = "");

// The impl name of the kernel `spec` ("FILE[:NAME]": NAME, else FILE's stem), and its FILE,
// without reading it.
std::string kernel_impl_name(const std::string& spec);
std::string kernel_file(const std::string& spec);

// Registers the kernel `spec` ("my_kernels.py:my_add", or "my_kernel.py" for a module that is the
// kernel); `default_op` is its op when it declares none. Returns the impl name. Throws UsageError
// when the file or kernel is missing or malformed, when the name is taken, or when no worker can
// read it.
std::string add_user_kernel(const std::string& spec, const std::string& default_op = "");

// Whether `impl` is a registered user kernel.
bool is_user_kernel(const std::string& impl);

}  // namespace opmeter::worker
