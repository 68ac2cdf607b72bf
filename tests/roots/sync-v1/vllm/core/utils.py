"""Helpers."""


def cdiv(a, b):
    return -(a // -b)


def hash_block(tokens, parent=None):
    h = hash((parent, tuple(tokens)))
    return h & 0xFFFFFFFF
