"""A fake scheduler with the shapes the anchor tests need."""

from __future__ import annotations

import functools
from typing import overload

from vllm.v1.core.kv_cache_utils import hash_request_tokens
from vllm.v1.core.sched.interface import SchedulerInterface
from vllm import _custom_ops as ops


class Scheduler(SchedulerInterface):
    """Schedules requests."""

    policy: str = "fcfs"

    def __init__(self, max_num_seqs: int) -> None:
        self.max_num_running_reqs = max_num_seqs
        self.requests: dict[str, list[int]] = {}
        self.max_num_running_reqs = max_num_seqs * 2
        self._budget = 0

    def schedule(self) -> list[str]:
        token_budget = self.max_num_running_reqs
        scheduled = []
        for rid, tokens in self.requests.items():
            if token_budget <= 0:
                break
            hashes = hash_request_tokens(16, tokens)
            token_budget -= len(hashes)
            scheduled.append(rid)
        self.finish_requests(scheduled)
        ops.reshape_and_cache(scheduled)
        return scheduled

    @functools.cache
    @staticmethod
    def _cached_policy(name: str) -> str:
        return name.upper()

    @property
    def budget(self) -> int:
        return self._budget

    @budget.setter
    def budget(self, value: int) -> None:
        self._budget = value

    @overload
    def get(self, key: int) -> int: ...

    @overload
    def get(self, key: str) -> str: ...

    def get(self, key):
        return key

    class Stats:
        """Nested class."""

        class Counter:
            def bump(self) -> int:
                return 1

        def total(self) -> int:
            return self.Counter().bump()

    async def step_async(self) -> None:
        self.schedule()
