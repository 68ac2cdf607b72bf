#include "core/registration.h"
#include "ops.h"

#include <torch/library.h>

TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {
  // Layernorm
  ops.def(
      "rms_norm(Tensor! out, Tensor input, float epsilon) -> ()");
  ops.impl("rms_norm", torch::kCUDA, &rms_norm);
}

TORCH_LIBRARY_EXPAND(CONCAT(TORCH_EXTENSION_NAME, _cache_ops), cache_ops) {
  // Reshape the key and value tensors and cache them.
  cache_ops.def(
      "reshape_and_cache(Tensor key, Tensor value,"
      "                  Tensor! key_cache) -> ()");
  cache_ops.impl("reshape_and_cache", torch::kCUDA, &reshape_and_cache);
}

REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
