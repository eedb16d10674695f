#pragma once

namespace opmeter {
// The whole command line (`opmeter run|list|info ...`). Returns the process exit code:
// 0 ok, 1 some case failed / errored / crashed / timed out, 2 bad input, 130 interrupted.
int cli_main(int argc, char** argv);
}  // namespace opmeter
