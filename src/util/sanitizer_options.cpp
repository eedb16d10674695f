// Defaults of a sanitized build (OPMETER_SANITIZE); ASAN_OPTIONS still wins over them.
// handle_segv=0: a case that crashes dies of its signal as in a plain build, so isolation records
// "killed by signal 11"; crashes are the runner's to report, not the sanitizer's.
// protect_shadow_gap=0: the CUDA driver maps memory where AddressSanitizer would otherwise guard
// its shadow gap.
#ifdef OPMETER_SANITIZE
extern "C" const char* __asan_default_options() { return "handle_segv=0:protect_shadow_gap=0"; }
extern "C" const char* __ubsan_default_options() { return "print_stacktrace=1"; }
#endif
