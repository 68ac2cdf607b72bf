"""The old engine."""


class LegacyEngine:
    def step(self):
        return None
