from vllm.utils import dumps, pick_backend


class FlashAttentionBackend:
    name = "FLASH_ATTN"

    @staticmethod
    def get_name() -> str:
        return pick_backend() + dumps(FlashAttentionBackend.name)
