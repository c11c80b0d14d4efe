/*
 * test_comm_check.c (label gpu): bench allreduce's inputs and check
 * (kernels/comm_check.cu) on one GPU, for F32, BF16 and F16: rank r's
 * element i is ((r + i) mod 4) + 1; with one rank the "sum" is the input,
 * so the check counts nothing; as the sum of three ranks it counts every
 * element whose value differs (all but those where rank 0's value happens
 * to be the sum: none); one corrupted element of a true sum is counted once.
 */
#include "kernels/comm_check.h"
#include "tests/gpu/gpu_test.h"

static unsigned long long count(const void *buf, size_t n, enum st_dtype dt, int ranks,
				unsigned long long *bad)
{
	unsigned long long h = 0;

	CUDA_OK(cudaMemset(bad, 0, sizeof(*bad)));
	CUDA_OK(comm_check_sum(buf, n, dt, ranks, bad, 0));
	CUDA_OK(cudaMemcpy(&h, bad, sizeof(h), cudaMemcpyDeviceToHost));
	return h;
}

int main(void)
{
	static const enum st_dtype dts[] = { ST_DT_F32, ST_DT_BF16, ST_DT_F16 };
	const size_t n = 1000003;
	unsigned long long *bad;
	float *sum;
	void *buf;

	if (!gpu_or_skip())
		return SKIP_NO_GPU;
	CUDA_OK(cudaMalloc(&buf, n * 4));
	CUDA_OK(cudaMalloc((void **)&bad, sizeof(*bad)));
	sum = malloc(n * sizeof(*sum));
	for (size_t d = 0; d < 3; d++) {
		CUDA_OK(comm_check_fill(buf, n, dts[d], 0, 0));
		CHECK(count(buf, n, dts[d], 1, bad) == 0, "%s: one rank's input is its sum", st_dtype_name(dts[d]));
		CHECK(count(buf, n, dts[d], 3, bad) == n, "%s: it is not the sum of three ranks",
		      st_dtype_name(dts[d]));
	}
	/* a true three-rank sum, F32, with one element off */
	for (size_t i = 0; i < n; i++)
		sum[i] = (float)((0 + i) % 4 + 1 + (1 + i) % 4 + 1 + (2 + i) % 4 + 1);
	sum[n / 2] += 1;
	CUDA_OK(cudaMemcpy(buf, sum, n * sizeof(*sum), cudaMemcpyHostToDevice));
	CHECK(count(buf, n, ST_DT_F32, 3, bad) == 1, "one wrong element");
	CHECK(comm_check_fill(buf, n, ST_DT_I32, 0, 0) == cudaErrorInvalidValue, "an integer dtype is refused");
	cudaGetLastError();
	free(sum);
	cudaFree(buf);
	cudaFree(bad);
	return check_done("gpu_comm_check");
}
