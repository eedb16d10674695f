#include "cli/cli.hpp"

int main(int argc, char** argv) { return opmeter::cli_main(argc, argv); }
