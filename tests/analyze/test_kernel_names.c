/*
 * test_kernel_names.c: kernel names for people (analyze/common.h) on real
 * names from samples/ and docs/foreign/: PyTorch's (templates, lambdas,
 * anonymous namespaces, cub), cuBLAS's nvjet and xmma, cuBLASLt's, CUTLASS,
 * cuDNN's, Triton's, NCCL's and steptrace's own; then every bundle given
 * on the command line: each table of its kernels prints distinct names no
 * wider than KERNEL_NAME_WIDTH.
 */
#include "analyze/common.h"
#include "tests/lib/check.h"

#include <string.h>

static const char *base(const char *name)
{
	static char buf[1024];

	return kernel_base_name(name, buf, sizeof(buf));
}

static void test_base_names(void)
{
	static const struct { const char *name, *base; } cases[] = {
		/* PyTorch */
		{ "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
		  "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)",
		  "at::native::vectorized_elementwise_kernel" },
		{ "void (anonymous namespace)::softmax_warp_forward<float, float, float, 9, false, false>"
		  "(float*, float const*, int, int, int, bool const*, int, bool)",
		  "(anonymous namespace)::softmax_warp_forward" },
		{ "void at::native::(anonymous namespace)::CatArrayBatchedCopy_vectorized<at::native::(anonymous "
		  "namespace)::OpaqueType<2u>, unsigned int, 3, 128, 1, 16, 8>(char*, at::native::(anonymous "
		  "namespace)::CatArrInputTensorMetadata<at::native::(anonymous namespace)::OpaqueType<2u>, "
		  "unsigned int, 128, 1>, at::native::(anonymous namespace)::TensorSizeStride<unsigned int, 4u>, "
		  "int, unsigned int)",
		  "at::native::(anonymous namespace)::CatArrayBatchedCopy_vectorized" },
		{ "void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::"
		  "direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::"
		  "{lambda()#12}::operator()() const::{lambda(c10::BFloat16)#1}>(at::TensorIteratorBase&, "
		  "at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() "
		  "const::{lambda()#12}::operator()() const::{lambda(c10::BFloat16)#1} const&)::{lambda(int)#1}>"
		  "(int, at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda(at::"
		  "TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#12}::operator()() const::"
		  "{lambda(c10::BFloat16)#1}>(at::TensorIteratorBase&, at::native::direct_copy_kernel_cuda(at::"
		  "TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#12}::operator()() const::"
		  "{lambda(c10::BFloat16)#1} const&)::{lambda(int)#1})",
		  "at::native::elementwise_kernel" },
		{ "void at_cuda_detail::cub::detail::radix_sort::DeviceRadixSortOnesweepKernel<at_cuda_detail::"
		  "cub::detail::radix::policy_hub<long, at::cuda::cub::detail::OpaqueType<8>, unsigned long long>"
		  "::Policy1000, (at_cuda_detail::cub::SortOrder)0, long, at::cuda::cub::detail::OpaqueType<8>, "
		  "unsigned long long, int, int, at_cuda_detail::cub::detail::identity_decomposer_t>(int*, int*, "
		  "unsigned long long*, unsigned long long const*, long*, long const*, at::cuda::cub::detail::"
		  "OpaqueType<8>*, at::cuda::cub::detail::OpaqueType<8> const*, int, int, int, at_cuda_detail::"
		  "cub::detail::identity_decomposer_t)",
		  "at_cuda_detail::cub::detail::radix_sort::DeviceRadixSortOnesweepKernel" },
		/* cuBLAS, cuBLASLt, CUTLASS, cuDNN */
		{ "nvjet_sm90_tst_192x128_64x5_1x2_h_bz_coopB_TNT", "nvjet_sm90_tst_192x128_64x5_1x2_h_bz_coopB_TNT" },
		{ "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x64x8_stage3_warpsize1x4x1_ffma_aligna4_"
		  "alignc4_execute_split_k_kernel__5x_cublas",
		  "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x64x8_stage3_warpsize1x4x1_ffma_aligna4_"
		  "alignc4_execute_split_k_kernel__5x_cublas" },
		{ "void cublasLt::splitKreduce_kernel<32, 16, int, float, float, float, float, false, float, float, "
		  "float, true, false, false, false>(cublasLt::cublasSplitKParams<float>, float const*, float "
		  "const*, float*, float*, float const*, float const*, float const*, float const*, float*, void*, "
		  "long, float*, int*, float*, float*, float const*, float const*, float const*, float const*, "
		  "float const*)",
		  "cublasLt::splitKreduce_kernel" },
		{ "void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>(cutlass_80_simt_sgemm_"
		  "256x128_8x4_nn_align1::Params)",
		  "cutlass::Kernel2" },
		{ "void cudnn::fusion::convert_dq_to_16bits<true>(void const*, void*, unsigned int, float const*, "
		  "bool, bool)",
		  "cudnn::fusion::convert_dq_to_16bits" },
		{ "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x64_4x1x1_cga1x1x1_kernel0_0",
		  "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x64_4x1x1_cga1x1x1_kernel0_0" },
		/* Triton, NCCL */
		{ "triton_per_fused__to_copy_add_native_layer_norm_native_layer_norm_backward_view_11",
		  "triton_per_fused__to_copy_add_native_layer_norm_native_layer_norm_backward_view_11" },
		{ "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
		  "ncclDevKernel_AllReduce_Sum_f32_RING_LL" },
		/* steptrace's own */
		{ "void swiglu_forward_kernel<__nv_bfloat16>(__nv_bfloat16*, __nv_bfloat16 const*, long long, int)",
		  "swiglu_forward_kernel" },
		{ "adamw_kernel(float*, float const*, float*, float*, long long, float, float, float, float, float, "
		  "float, float)",
		  "adamw_kernel" },
		{ "zero_groups_kernel(float*, zero_args)", "zero_groups_kernel" },
		/* copies, and what is not a signature */
		{ "[CUDA memcpy Device-to-Device]", "[CUDA memcpy Device-to-Device]" },
		{ "", "" },
		{ "f(", "f(" },
		{ "(x)", "(x)" },
		{ "kernel_17", "kernel_17" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		CHECK_STR(base(cases[i].name), cases[i].base);
	/* cut to the buffer, never past it */
	{
		char small[8];

		CHECK_STR(kernel_base_name("void swiglu_forward_kernel<float>(float*)", small, sizeof(small)), "swiglu_");
	}
}

/* What one table of these kernels prints for each, in the order given. */
static void expect_shown(const char *const *names, size_t n, const char *const *want)
{
	struct kernel_names kn;

	CHECK(kernel_names_init(&kn, names, n, KERNEL_NAME_WIDTH, false) == 0);
	for (size_t i = 0; i < n; i++)
		CHECK_STR(kernel_names_get(&kn, names[i]), want[i]);
	kernel_names_release(&kn);
}

static void test_tables(void)
{
	/* FP32 against BF16 (diff): the template arguments tell them apart */
	static const char *const ours[] = {
		"void swiglu_forward_kernel<__nv_bfloat16>(__nv_bfloat16*, __nv_bfloat16 const*, long long, int)",
		"void swiglu_forward_kernel<float>(float*, float const*, long long, int)",
		"adamw_kernel(float*, float const*, float*, float*, long long, float, float, float, float, float, "
		"float, float)",
		"void swiglu_forward_kernel<float>(float*, float const*, long long, int)",   /* a repeat */
	};
	static const char *const ours_shown[] = {
		"swiglu_forward_kernel<__nv_bfloat16>", "swiglu_forward_kernel<float>", "adamw_kernel",
		"swiglu_forward_kernel<float>",
	};
	/* PyTorch: the functor tells them apart, or, where it is the same, a number */
	static const char *const torch[] = {
		"void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
		"std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)",
		"void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
		"std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)",
		"void at::native::vectorized_elementwise_kernel<2, at::native::AUnaryFunctor<double, double, "
		"double, at::native::binary_internal::MulFunctor<double> >, std::array<char*, 2ul> >(int, "
		"at::native::AUnaryFunctor<double, double, double, at::native::binary_internal::MulFunctor<double> "
		">, std::array<char*, 2ul>)",
		"void at::native::vectorized_elementwise_kernel<2, at::native::AUnaryFunctor<long, long, long, "
		"at::native::binary_internal::MulFunctor<long> >, std::array<char*, 2ul> >(int, at::native::"
		"AUnaryFunctor<long, long, long, at::native::binary_internal::MulFunctor<long> >, std::array<char*, "
		"2ul>)",
		"void at::native::vectorized_elementwise_kernel<8, at::native::(anonymous namespace)::silu_kernel("
		"at::TensorIteratorBase&)::{lambda()#1}::operator()() const::{lambda()#6}::operator()() const::"
		"{lambda(c10::BFloat16)#1}, std::array<char*, 2ul> >(int, at::native::(anonymous namespace)::"
		"silu_kernel(at::TensorIteratorBase&)::{lambda()#1}::operator()() const::{lambda()#6}::operator()() "
		"const::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul>)",
		"void at::native::vectorized_gather_kernel<16, long>(char*, char*, long*, int, long, long, long, "
		"long, bool)",
	};
	static const char *const torch_shown[] = {
		"vectorized_elementwise_kernel<4, CUDAFunctor_add, array>",
		"vectorized_elementwise_kernel<4, FillFunctor, array>",
		"vectorized_elementwise_kernel<2, AUnaryFunctor, array> #1",
		"vectorized_elementwise_kernel<2, AUnaryFunctor, array> #2",
		"vectorized_elementwise_kernel<8, silu_kernel, array>",
		"at::native::vectorized_gather_kernel",
	};
	/* too wide: the namespaces go first, then the middle ("..."), the ends kept */
	static const char *const long_names[] = {
		"triton_per_fused__to_copy_add_native_layer_norm_native_layer_norm_backward_view_11",
		"triton_per_fused__to_copy_add_native_layer_norm_native_layer_norm_backward_view_12",
		"nvjet_sm90_tst_64x64_64x13_1x2_h_bz_NNT",
		"void at::native::(anonymous namespace)::layer_norm_grad_input_kernel_vectorized<float, float, "
		"false>(float const*, float const*, float const*, float const*, float const*, float*, int)",
		"void at::native::(anonymous namespace)::cunn_SoftMaxForward<8, c10::BFloat16, float, "
		"c10::BFloat16, at::native::(anonymous namespace)::LogSoftMaxForwardEpilogue>(c10::BFloat16*, "
		"c10::BFloat16 const*, int)",
	};
	static const char *const long_shown[] = {
		"triton_per_fused__to_copy_add_native_l...rm_backward_view_11",
		"triton_per_fused__to_copy_add_native_l...rm_backward_view_12",
		"nvjet_sm90_tst_64x64_64x13_1x2_h_bz_NNT",
		"layer_norm_grad_input_kernel_vectorized",
		"at::native::(anonymous namespace)::cunn_SoftMaxForward",
	};
	struct kernel_names kn;

	expect_shown(ours, 4, ours_shown);
	expect_shown(torch, 6, torch_shown);
	expect_shown(long_names, 5, long_shown);
	CHECK(strlen(long_shown[0]) == KERNEL_NAME_WIDTH);

	/* whole: every name as it is; a name the table does not know, as it is */
	CHECK(kernel_names_init(&kn, torch, 6, KERNEL_NAME_WIDTH, true) == 0);
	for (size_t i = 0; i < 6; i++)
		CHECK_STR(kernel_names_get(&kn, torch[i]), torch[i]);
	CHECK_STR(kernel_names_get(&kn, "other(int)"), "other(int)");
	kernel_names_release(&kn);
	CHECK(kernel_names_init(&kn, NULL, 0, KERNEL_NAME_WIDTH, false) == 0);
	CHECK_STR(kernel_names_get(&kn, "void f<int>(int)"), "void f<int>(int)");
	kernel_names_release(&kn);
}

int main(void)
{
	test_base_names();
	test_tables();
	return check_done("test_kernel_names");
}
