"""The scheduler."""


class Scheduler:
    def __init__(self, budget):
        self.budget = budget

    def schedule(self, requests):
        """Pick requests within the token budget."""
        token_budget = self.budget
        out = []
        for r in requests:
            if r.n <= token_budget:
                out.append(r)
                token_budget -= r.n
        return out

    def finish(self, req):
        req.done = True
        return req
