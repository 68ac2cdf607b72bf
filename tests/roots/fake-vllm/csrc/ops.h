#pragma once

#include <torch/all.h>

void reshape_and_cache(torch::Tensor& key, torch::Tensor& value,
                       torch::Tensor& key_cache);

void rms_norm(torch::Tensor& out, torch::Tensor& input, double epsilon);
