#pragma once

namespace opmeter::build_info {
extern const char* const git_sha;
extern const char* const build_type;
extern const char* const compiler;
extern const char* const version;
extern const char* const yaml_cpp_version;
extern const char* const openblas_version;
}  // namespace opmeter::build_info
