"""The user-facing entry point."""

from vllm.v1.core.sched.scheduler import Scheduler


class LLM:
    """An offline engine."""

    def __init__(self, model: str) -> None:
        self.model = model
        self.scheduler = Scheduler(max_num_seqs=8)

    def generate(self, prompts: list[str]) -> list[str]:
        out = self.scheduler.schedule()
        return [self._postprocess(p) for p in prompts] + out

    def _postprocess(self, text: str) -> str:
        return text.strip()
