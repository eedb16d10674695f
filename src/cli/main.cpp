#include <cstdio>

#include "cli/cli.hpp"

int main(int argc, char** argv) {
  // Tables go to stdout, messages to stderr: line by line, so that a log capturing both (2>&1)
  // never has a message spliced into a table's line, as a block-buffered stdout would.
  std::setvbuf(stdout, nullptr, _IOLBF, 1 << 16);
  return opmeter::cli_main(argc, argv);
}
