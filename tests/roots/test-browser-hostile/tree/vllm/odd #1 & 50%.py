from vllm.evil import Evil

ODD = Evil
