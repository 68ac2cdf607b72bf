"""Blocks."""


class BlockPool:
    def __init__(self, n):
        self.free_blocks = list(range(n))

    def free(self, block):
        self.free_blocks.append(block)
