#include <torch/library.h>

void rms_norm(torch::Tensor& out, torch::Tensor& input, double epsilon);

TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {
  ops.def("rms_norm(Tensor! out, Tensor input, float epsilon) -> ()");
  ops.impl("rms_norm", torch::kCPU, &rms_norm);
}
