"""Block hashing, split out of utils.py."""


def hash_block(tokens, parent=None):
    h = hash((parent, tuple(tokens)))
    return h & 0xFFFFFFFF
