#include "cache.h"
#include "ops.h"
#include "attention/dtype_fp8.cuh"

namespace vllm {

template <typename scalar_t, typename cache_t,
          Fp8KVCacheDataType kv_dt>
__global__ void reshape_and_cache_kernel(
    const scalar_t* __restrict__ key,  // [num_tokens, num_heads, head_size]
    cache_t* __restrict__ key_cache,
    const int64_t* __restrict__ slot_mapping) {
  const int64_t token_idx = blockIdx.x;
  const int64_t slot_idx = slot_mapping[token_idx];
  if (slot_idx < 0) {
    return;
  }
  key_cache[slot_idx] = key[token_idx];
}

}  // namespace vllm

#define CALL_RESHAPE_AND_CACHE(KV_T, CACHE_T, KV_DTYPE)          \
  vllm::reshape_and_cache_kernel<KV_T, CACHE_T, KV_DTYPE>        \
      <<<grid, block, 0, stream>>>(key.data_ptr<KV_T>(),         \
                                   key_cache.data_ptr<CACHE_T>(), \
                                   slot_mapping.data_ptr<int64_t>());

void reshape_and_cache(torch::Tensor& key, torch::Tensor& value,
                       torch::Tensor& key_cache) {
  int num_tokens = key.size(0);
  dim3 grid(num_tokens);
  dim3 block(128);
  CALL_RESHAPE_AND_CACHE(float, float, vllm::Fp8KVCacheDataType::kAuto);
}

int helper(int x) { return x + 1; }

int helper(int x, int y) { return x + y; }

int use_helpers() { return helper(1) + helper(1, 2); }
