"""When a job that failed for a transient reason runs again: capped exponential backoff
with jitter, until a horizon counted in time from the job's start (the event's receipt,
or an admin's retry), never in tries.

Nothing here is kept in a worker's memory. The try count is arq's (``arq:retry:<id>``,
counted when a try starts, so a killed worker's try counts too), the start is in the
job's own data, and the next try is the job's score in the queue: a worker restarted or
SIGKILLed leaves the schedule where it was, and any worker carries it on.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class RetryPolicy:
    """``first_delay`` doubling per try up to ``max_delay``, each delay drawn between
    half of it and all of it ("equal jitter": a try never comes straight back, and the
    tries of events that failed together spread out), until ``horizon``."""

    first_delay: dt.timedelta
    max_delay: dt.timedelta
    horizon: dt.timedelta
    random: Callable[[], float] = field(default=random.random, compare=False)

    def delay(self, job_try: int, now: dt.datetime, start: dt.datetime) -> dt.timedelta | None:
        """How long after ``now`` a job started at ``start`` whose try ``job_try`` (from
        1) just failed runs again; ``None`` once the horizon has passed. The last delay
        ends at the horizon, so the last try is made then rather than a delay later."""
        left = start + self.horizon - now
        if left <= dt.timedelta(0):
            return None
        step = min(
            self.max_delay.total_seconds(),
            self.first_delay.total_seconds() * 2.0 ** min(max(job_try, 1) - 1, 64),
        )
        delay = dt.timedelta(seconds=step / 2 + step / 2 * self.random())
        return min(delay, left)

    def gave_up(self, last_error: str) -> str:
        """The error of what failed past the horizon: the horizon, then its last error."""
        return f"gave up after retrying for {self.horizon}: {last_error}"
