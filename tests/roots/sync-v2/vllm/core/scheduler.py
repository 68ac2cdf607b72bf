"""The scheduler."""


class Scheduler:
    def __init__(self, budget):
        self.max_tokens = budget

    def schedule(self, requests):
        """Pick requests within the token budget, longest first."""
        token_budget = self.max_tokens
        out = []
        for r in sorted(requests, key=lambda r: -r.n):
            if r.n <= token_budget:
                out.append(r)
                token_budget -= r.n
        return out

    def preempt(self, req):
        req.preempted = True

    def finish(self, req):
        req.done = True
        return req
