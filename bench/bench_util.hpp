// What the bench programs share: their command-line numbers and their timing (best of runs).
#pragma once

#include <algorithm>
#include <cerrno>
#include <chrono>
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

// The fastest of `reps` calls of f, in seconds: on a loaded machine the minimum is the run least
// disturbed.
template <class F>
double best_of(std::size_t reps, F&& f) {
  double best = 1e30;
  for (std::size_t r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}
