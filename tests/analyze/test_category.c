/*
 * test_category.c: the category rules on real names from recorded bundles:
 * the op's kind decides, a matrix-product op's helper kernels (attention's
 * layout permute) count by their own names, and cuBLAS's own helpers
 * (split-K reduction) stay GEMM.
 */
#include "analyze/category.h"
#include "tests/lib/check.h"

#include <string.h>

static enum kernel_category of(const char *kind, const char *phase, const char *kernel)
{
	return category_pick(category_from_op(kind, phase), category_from_kernel_name(kernel));
}

int main(void)
{
	CHECK(of("attn/av", "forward", "nvjet_sm90_tst_64x32_64x16_1x4_h_bz_NTT") == CAT_GEMM);
	CHECK(of("attn/av", "forward", "void permute_heads_kernel<__nv_bfloat16>(heads_io<__nv_bfloat16>, "
		 "float2 const*, long long, int, int, int, int, int)") == CAT_ELEMENTWISE);
	CHECK(of("lm_head", "backward", "void cublasLt::splitKreduce_kernel<32, 16, int, float>(...)") ==
	      CAT_GEMM);
	CHECK(of("attn/scores", "backward", "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n") == CAT_GEMM);
	/* a name that says nothing keeps the op's category */
	CHECK(of("ffn/w1", "forward", "kernel_17") == CAT_GEMM);
	/* only GEMM ops give way to the name: a softmax op's kernels are softmax */
	CHECK(of("attn/softmax", "forward", "void causal_softmax_forward_kernel<float>(...)") == CAT_SOFTMAX);
	CHECK(of("attn/rope", "forward", "void permute_heads_kernel<float>(...)") == CAT_ELEMENTWISE);
	/* an op kind that says nothing ("ln1") leaves it to the kernel's name */
	CHECK(of("ln1", "forward", "void rmsnorm_forward_kernel<float>(...)") == CAT_REDUCTION);
	CHECK(of("adamw", "optimizer", "cast_kernel") == CAT_OPTIMIZER);
	/* collectives: a communication op's (not "reduction" for AllReduce), or NCCL's without an op */
	CHECK(of("allreduce/bucket.3", "comm",
		 "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)") == CAT_COMM);
	CHECK(category_from_kernel_name("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(...)") == CAT_COMM);
	CHECK(!strcmp(category_name(CAT_COMM), "communication"));
	/* PyTorch's kernels carry lambdas in their names: not the LAMB optimizer */
	CHECK(category_from_kernel_name("void at::native::vectorized_elementwise_kernel<8, at::native::"
					"bfloat16_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda(float)#1}, "
					"std::array<char*, 2ul> >(...)") == CAT_ELEMENTWISE);
	CHECK(category_from_kernel_name("void multi_tensor_apply_kernel<LAMB_stage1<float>>(...)") ==
	      CAT_OPTIMIZER);
	/* PyTorch ops recorded with `record -- COMMAND`: the family leads the kind */
	CHECK(of("matmul/aten::addmm", "forward", "nvjet_sm90_tst_96x128_64x7_2x1_v_bz_TNN") == CAT_GEMM);
	CHECK(of("softmax/aten::_softmax", "forward", "void (anonymous namespace)::softmax_warp_forward"
		 "<float, float, float, 9, false, false>(...)") == CAT_SOFTMAX);
	CHECK(category_pick(CAT_SOFTMAX, CAT_ELEMENTWISE) == CAT_SOFTMAX);
	CHECK(category_pick(CAT_GEMM, CAT_OTHER) == CAT_GEMM);
	CHECK(category_pick(CAT_GEMM, CAT_REDUCTION) == CAT_REDUCTION);
	return check_done("test_category");
}
