"""KV cache helpers."""

import functools
from typing import NamedTuple

NONE_HASH = 0


class BlockHash(NamedTuple):
    hash_value: int
    token_ids: tuple[int, ...]


@functools.lru_cache(maxsize=1024)
def hash_block_tokens(parent_block_hash: int | None, curr_block_token_ids: tuple[int, ...]) -> BlockHash:
    """Hash one full block."""
    if parent_block_hash is None:
        parent_block_hash = NONE_HASH
    return BlockHash(hash((parent_block_hash, curr_block_token_ids)), curr_block_token_ids)


def hash_request_tokens(block_size: int, token_ids: list[int]) -> list[BlockHash]:
    hashes = []
    parent = None
    for start in range(0, len(token_ids), block_size):
        block = tuple(token_ids[start : start + block_size])
        h = hash_block_tokens(parent, block)
        hashes.append(h)
        parent = h.hash_value
    return hashes
