/*
 * fuzz.h: what the libFuzzer harnesses of tests/fuzz share. Each harness
 * is one LLVMFuzzerTestOneInput(); built with clang and -fsanitize=fuzzer
 * it is a fuzzer, built with standalone.c it runs given inputs once (the
 * regression test, in every build).
 */
#ifndef STEPTRACE_TESTS_FUZZ_FUZZ_H
#define STEPTRACE_TESTS_FUZZ_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Silences steptrace's messages once; the path of this process's scratch bundle. */
const char *fuzz_setup(void);

/*
 * Loads the bundle at `path` as the analysis commands do (a memory budget
 * of 128 MiB), and runs a few reports over it: every decode path, the
 * replay's build and projection, the memory timeline, the summary.
 */
void fuzz_analyse(const char *path);

#endif
