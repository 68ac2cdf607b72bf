"""Python wrappers of the C++/CUDA ops."""

import torch


def reshape_and_cache(key, value=None) -> None:
    torch.ops._C_cache_ops.reshape_and_cache(key, value)


def rms_norm(out, input, weight, epsilon: float) -> None:
    torch.ops._C.rms_norm(out, input, weight, epsilon)
