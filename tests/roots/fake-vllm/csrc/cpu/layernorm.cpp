#include <torch/all.h>

// CPU implementation; CUDA registrations must win over this one.
void rms_norm(torch::Tensor& out, torch::Tensor& input, double epsilon) {
  out.copy_(input * epsilon);
}
