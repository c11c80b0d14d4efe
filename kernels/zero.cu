/*
 * zero.cu: one launch that zeroes groups of equally spaced ranges, such as
 * every RMSNorm gain's gradient, which the backward accumulates into with
 * atomic adds. The groups go by value; blockIdx.y picks one.
 */
#include "kernels/common.cuh"
#include "kernels/zero.h"

struct zero_args {
	struct zero_group g[ZERO_MAX_GROUPS];
};

__global__ void zero_groups_kernel(float *base, struct zero_args a)
{
	const struct zero_group *g = &a.g[blockIdx.y];
	long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;

	if (i < (long long)g->count * g->len)
		base[g->first + i / g->len * g->stride + i % g->len] = 0.0f;
}

extern "C" int zero_groups(float *base, const struct zero_group *groups, int n_groups,
			   cudaStream_t s)
{
	struct zero_args a = {};
	long long most = 0;

	if (n_groups < 0 || n_groups > ZERO_MAX_GROUPS)
		return st_error("cannot zero %d groups in one launch (at most %d)", n_groups,
				ZERO_MAX_GROUPS);
	for (int j = 0; j < n_groups; j++) {
		a.g[j] = groups[j];
		if ((long long)groups[j].count * groups[j].len > most)
			most = (long long)groups[j].count * groups[j].len;
	}
	if (most == 0)
		return 0;
	zero_groups_kernel<<<dim3(ceil_div(most, 256), n_groups), 256, 0, s>>>(base, a);
	return KERNEL_CHECK("zero_groups");
}
