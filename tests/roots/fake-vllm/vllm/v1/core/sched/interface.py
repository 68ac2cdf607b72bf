from abc import ABC, abstractmethod


class SchedulerInterface(ABC):
    @abstractmethod
    def schedule(self) -> list[str]:
        raise NotImplementedError

    def finish_requests(self, request_ids: list[str]) -> None:
        for rid in request_ids:
            self.requests.pop(rid, None)
