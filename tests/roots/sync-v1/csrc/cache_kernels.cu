// Cache kernels (fixture).
namespace vllm {

void reshape_and_cache(int* key, int* cache, int n) {
  for (int i = 0; i < n; ++i) {
    cache[i] = key[i];
  }
}

void copy_blocks(int* src, int* dst, int n) {
  for (int i = 0; i < n; ++i) {
    dst[i] = src[i];
  }
}

}  // namespace vllm
