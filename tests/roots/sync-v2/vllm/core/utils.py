"""Helpers."""


def ceil_div(a, b):
    return -(a // -b)
