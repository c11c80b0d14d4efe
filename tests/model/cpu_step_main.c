/*
 * cpu_step_main.c: `steptrace step` and `steptrace bench` on the CPU
 * reference (model_cpu.c), for comparing the reference with PyTorch:
 *   steptrace_cpu step --d-model 64 ... --weights w.safetensors
 *       --batch-file b.safetensors -o out.safetensors
 *   python3 scripts/torch_check.py compare -w w.safetensors -b b.safetensors out.safetensors
 */
#include <stdio.h>
#include <string.h>

#include "cmd/commands.h"
#include "lib/error.h"

int main(int argc, const char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "step"))
		return cmd_step(argc - 1, argv + 1) & 0xff;
	if (argc >= 2 && !strcmp(argv[1], "bench"))
		return cmd_bench(argc - 1, argv + 1) & 0xff;
	fprintf(stderr, "usage: %s step|bench [<options>]\n", argv[0]);
	return EXIT_USAGE;
}
