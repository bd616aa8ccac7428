"""What became of every delivery, and whether the soak passed."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from bench.soak.chaos import Outages
from bench.soak.traffic import Answer

# security.md §5.2: the intake takes deliveries again within 5 s of Redis being back.
VALKEY_GRACE = 5.0
PENDING = "pending"  # an execution's status while a job of its event is due to run it


@dataclass
class Report:
    """What became of every delivery."""

    sent: int
    answers: Counter[int]  # status (0: no answer) -> count, every try
    undocumented_5xx: int  # 5xx other than a 503 while Valkey was down
    accepted: int
    never_accepted: int
    rejected_4xx: int  # deliveries whose last answer was a 4xx
    once: int
    lost: int
    duplicated: int
    extra_runs: int  # runs beyond one per accepted delivery
    stray_runs: int  # runs of deliveries never accepted
    p99_ms: float
    max_ms: float
    drain_seconds: float | None  # after the last outage ended
    timeline: list[str] = field(default_factory=list)  # when each part was away
    lost_examples: list[str] = field(default_factory=list)  # a few lost, when accepted
    workers_killed: int = 0
    backlog: str = ""  # what was left when the queue did not drain
    executions: Counter[str] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)

    @classmethod
    def of(
        cls,
        answers: Mapping[str, Sequence[Answer]],
        runs: Mapping[str, int],
        outages: Outages,
        drained_at: float | None,
    ) -> Report:
        statuses = Counter(a.status for tries in answers.values() for a in tries)
        undocumented = sum(
            1
            for tries in answers.values()
            for a in tries
            if a.status >= 500
            and not (
                a.status == 503
                and outages.covers("valkey", a.sent_at, a.sent_at + a.seconds, VALKEY_GRACE)
            )
        )
        accepted = {d for d, tries in answers.items() if any(200 <= a.status < 300 for a in tries)}
        rejected = sum(
            1 for d, tries in answers.items() if d not in accepted and 400 <= tries[-1].status < 500
        )
        counts = [runs.get(d, 0) for d in accepted]
        latencies = sorted(a.seconds for tries in answers.values() for a in tries)
        p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] if latencies else 0
        origin = min((a.sent_at for tries in answers.values() for a in tries), default=0.0)
        lost = sorted(
            (next(a.sent_at for a in answers[d] if 200 <= a.status < 300) - origin, d)
            for d in accepted
            if not runs.get(d)
        )
        last_end = outages.last_end()
        drain = None
        if drained_at is not None:
            drain = max(0.0, drained_at - last_end) if last_end is not None else 0.0
        return cls(
            sent=len(answers),
            answers=statuses,
            undocumented_5xx=undocumented,
            accepted=len(accepted),
            never_accepted=len(answers) - len(accepted) - rejected,
            rejected_4xx=rejected,
            once=counts.count(1),
            lost=counts.count(0),
            duplicated=sum(1 for c in counts if c > 1),
            extra_runs=sum(c - 1 for c in counts if c > 1),
            stray_runs=sum(n for d, n in runs.items() if d not in accepted),
            p99_ms=1000 * p99,
            max_ms=1000 * latencies[-1] if latencies else 0.0,
            drain_seconds=drain,
            timeline=outages.describe(origin),
            lost_examples=[f"{d} (accepted at +{at:.1f} s)" for at, d in lost[:5]],
        )

    @property
    def failures(self) -> list[str]:
        """Why the soak failed; empty when it passed."""
        found = []
        if self.lost:
            found.append(f"{self.lost} accepted deliveries lost")
        if self.duplicated:
            found.append(f"{self.duplicated} deliveries run more than once")
        if self.undocumented_5xx:
            found.append(f"{self.undocumented_5xx} 5xx answers other than Valkey's 503s")
        if self.never_accepted:
            found.append(f"{self.never_accepted} deliveries never accepted")
        if self.rejected_4xx:
            found.append(f"{self.rejected_4xx} deliveries refused with a 4xx")
        if self.drain_seconds is None:
            found.append("the queue did not drain")
        elif self.executions[PENDING]:
            # Nothing is left to carry them on: their jobs were dropped. A run requested
            # before the drop hides such a loss from the counts of runs above.
            found.append(
                f"{self.executions[PENDING]} trigger executions left pending by a drained queue"
            )
        return found

    def lines(self) -> list[str]:
        by_status = ", ".join(
            f"{'no answer' if status == 0 else status}: {count}"
            for status, count in sorted(self.answers.items())
        )
        fives = sum(n for status, n in self.answers.items() if status >= 500)
        drain = (
            f"not drained: {self.backlog or 'nothing left'}"
            if self.drain_seconds is None
            else f"{self.drain_seconds:.1f} s"
        )
        lines = [
            f"worker SIGKILLs:        {self.workers_killed}",
            f"deliveries sent:        {self.sent}",
            f"answers (every try):    {sum(self.answers.values())} ({by_status})",
            f"5xx answers:            {fives} ({self.undocumented_5xx} other than a 503 while "
            "Valkey was down)",
            f"answer latency:         p99 {self.p99_ms:.0f} ms, max {self.max_ms:.0f} ms",
            f"accepted (2xx):         {self.accepted} (never accepted: {self.never_accepted}, "
            f"refused 4xx: {self.rejected_4xx})",
            f"processed exactly once: {self.once}",
            f"lost (accepted, no run): {self.lost}",
            *(f"  lost: {example}" for example in self.lost_examples),
            f"duplicated (2+ runs):   {self.duplicated} ({self.extra_runs} extra runs)",
            f"runs of deliveries never accepted: {self.stray_runs}",
            f"away (from the first delivery): {'; '.join(self.timeline) or '-'}",
            f"time to drain after the last outage ended: {drain}",
        ]
        if self.executions:
            statuses = ", ".join(f"{s}: {n}" for s, n in sorted(self.executions.items()))
            lines.append(f"trigger executions:     {statuses}")
        lines += [f"  failed: {error}" for error in self.errors[:5]]
        lines.append(
            "result: " + ("PASS" if not self.failures else "FAIL: " + "; ".join(self.failures))
        )
        return lines
