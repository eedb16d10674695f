#pragma once
// For an op's tests of its `torch` impl: the worker on Debian's Python (which has PyTorch), a
// fresh worker before and after, and a skip where that Python lacks torch.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "tests/test_paths.hpp"
#include "worker/shared_worker.hpp"

namespace opmeter::testing {

inline bool python_has_torch() {
  static const bool yes = std::system((std::string(OPMETER_TEST_PYTHON) + " -c 'import torch' 2>/dev/null").c_str()) == 0;
  return yes;
}

struct TorchWorker {
  TorchWorker() {
    setenv("OPMETER_PYTHON", OPMETER_TEST_PYTHON, 1);
    worker::stop_shared_worker();
  }
  ~TorchWorker() {
    worker::stop_shared_worker();
    unsetenv("OPMETER_PYTHON");
  }
};

}  // namespace opmeter::testing

#define REQUIRE_PYTHON_TORCH()                   \
  if (!opmeter::testing::python_has_torch()) \
  GTEST_SKIP() << OPMETER_TEST_PYTHON << " has no PyTorch (scripts/install-deps.sh installs python3-torch)"
