"""Fake vLLM package (re-exports like the real one)."""

from vllm.engine.llm import LLM
from vllm.v1.core.sched import Scheduler as Scheduler

__all__ = ["LLM", "Scheduler"]
