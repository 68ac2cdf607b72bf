#pragma once

#include <cstdint>

namespace vllm {

struct BlockTable {
  int64_t num_blocks;

  int64_t size() const { return num_blocks; }
};

class CacheEngine {
 public:
  explicit CacheEngine(int64_t blocks);

  void swap_in(int64_t src, int64_t dst);
};

}  // namespace vllm
