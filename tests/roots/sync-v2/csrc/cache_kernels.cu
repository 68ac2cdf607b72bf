// Cache kernels (fixture).
namespace vllm {

void reshape_and_cache(int* key, int* cache, int* slots, int n) {
  for (int i = 0; i < n; ++i) {
    cache[slots[i]] = key[i];
  }
}

void copy_blocks(int* src, int* dst, int n) {
  for (int i = 0; i < n; ++i) {
    dst[i] = src[i];
  }
}

}  // namespace vllm
