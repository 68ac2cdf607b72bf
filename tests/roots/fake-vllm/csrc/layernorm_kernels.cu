#include "ops.h"

namespace vllm {

template <typename scalar_t>
__global__ void rms_norm_kernel(scalar_t* __restrict__ out,
                                const scalar_t* __restrict__ input,
                                const float epsilon) {
  out[threadIdx.x] = input[threadIdx.x] * epsilon;
}

}  // namespace vllm

void rms_norm(torch::Tensor& out, torch::Tensor& input, double epsilon) {
  vllm::rms_norm_kernel<float><<<1, 1>>>(out.data_ptr<float>(),
                                         input.data_ptr<float>(), epsilon);
}
