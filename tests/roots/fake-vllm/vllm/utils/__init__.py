from vllm.utils.conditional import *  # noqa: F401,F403
