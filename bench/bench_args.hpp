// Command-line numbers of the bench programs.
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>

// argv[i] as a positive whole number (fallback when absent), or a message naming the tool and
// the argument, and exit 2.
inline std::size_t positive_arg(const char* tool, int argc, char** argv, int i, const char* name, std::size_t fallback) {
  if (argc <= i) return fallback;
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(argv[i], &end, 10);
  if (errno != 0 || end == argv[i] || *end != '\0' || v == 0 || argv[i][0] == '-') {
    std::fprintf(stderr, "%s: %s must be a positive whole number, got '%s'\n", tool, name, argv[i]);
    std::exit(2);
  }
  return static_cast<std::size_t>(v);
}
