#pragma once
// Paths only the build knows: the source tree, the test CLI, the test plugins and libraries.
// They are defined in one source that CMake generates (tests/CMakeLists.txt), not passed as -D
// flags: a path on the compile line of every test file would make a clean clone at another path
// miss the compiler cache for all of them. The source tree and the test CLI are looked up at run
// time (tests/test_paths.cpp) from the paths the build knows; the rest keep the -D macros' names.

extern const char kBuiltSourceDir[];  // where the build found the sources
extern const char kBuiltTestbin[];    // where the build put the test CLI

// The source tree: $OPMETER_TEST_SOURCE_DIR where set (a GPU machine runs a bundle of this build
// in a copy of the tree at another path), else where the build found it.
const char* opmeter_source_dir();
// The CLI with the test impls linked in: beside the running test binary where it is there (a
// bundle carries both into one folder), else where the build put it.
const char* opmeter_testbin();
extern const char kBuiltCudnnModule[];  // empty where this build has no cuDNN module
// The cuDNN module the CUDA plugin loads from beside itself: beside the running test binary where
// it is there (a bundle), else where the build put it; empty where this build has none.
const char* opmeter_cudnn_module();
extern const char OPMETER_TEST_PYTHON[];  // Debian's python3, which has PyTorch
extern const char EXAMPLE_PLUGIN[];       // examples/plugin
extern const char PLUGIN_BAD_RESULTS[];   // tests/plugins/bad_plugin.c, each way wrong
extern const char PLUGIN_WRONG_ABI[];
extern const char PLUGIN_BAD_DESCRIPTIONS[];
extern const char PLUGIN_NO_ENTRY[];
extern const char PLUGIN_ENDS_PROCESS[];  // exit(0) / segfault / abort in run
extern const char PLUGIN_MARKS_LOAD[];    // its constructor writes $OPMETER_TEST_MARKER
extern const char PLUGIN_EXITS_REGISTERING[];    // exit(3) in opmeter_plugin_register
extern const char PLUGIN_CRASHES_REGISTERING[];  // a segfault there
extern const char PLUGIN_EXITS_LOADING[];        // exit(4) in its constructor
extern const char FAKE_NVML[];  // tests/fake_nvml.cpp
extern const char FAKE_NVML_NOENERGY[];
