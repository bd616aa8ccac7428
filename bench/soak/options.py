"""Command-line options of the soak."""

from __future__ import annotations

import argparse
import os
import re
import signal
from collections.abc import Sequence

from bench.tracking import _non_negative, _positive


def seconds(text: str) -> float:
    """``90``, ``90s``, ``1.5m`` or ``5m`` as seconds."""
    found = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*(ms|s|m|h)?\s*", text)
    if found is None:
        raise argparse.ArgumentTypeError(f"not a duration (e.g. 60s, 5m): {text!r}")
    scale = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}[found[2] or "s"]
    return float(found[1]) * scale


def setting(text: str) -> tuple[str, str]:
    """``NAME=VALUE``, a setting of the webhooks service (its environment variable)."""
    name, sep, value = text.partition("=")
    if not sep or re.fullmatch(r"[A-Z][A-Z0-9_]*", name) is None:
        raise argparse.ArgumentTypeError(
            f"not NAME=VALUE (e.g. WORKER_POLL_DELAY=PT0.1S): {text!r}"
        )
    return name, value


def away_order(text: str) -> tuple[str, str]:
    """``tracking,identity`` or ``identity,tracking``."""
    names = tuple(name.strip() for name in text.split(","))
    if sorted(names) != ["identity", "tracking"]:
        raise argparse.ArgumentTypeError(f"not tracking,identity or identity,tracking: {text!r}")
    return names[0], names[1]


def stop_signal(text: str) -> signal.Signals:
    """``KILL`` or ``TERM`` (a ``SIG`` in front allowed)."""
    name = text.strip().upper().removeprefix("SIG")
    if name not in ("KILL", "TERM"):
        raise argparse.ArgumentTypeError(f"not KILL or TERM: {text!r}")
    return signal.Signals[f"SIG{name}"]


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The soak's options; argparse exits with status 2 and a usage line on bad input."""
    parser = argparse.ArgumentParser(
        prog="python -m bench.soak",
        description="The soak: signed webhook deliveries through the real stack while its "
        "parts are killed, then a report of what became of them (see bench/soak/__init__.py).",
    )
    add = parser.add_argument
    add("--deliveries", type=_positive, default=10_000, help="deliveries sent (default: 10000)")
    add("--kills", type=_non_negative, default=100, help="worker SIGKILLs (default: 100)")
    add("--workers", type=_positive, default=3, help="webhook workers (default: 3)")
    add(
        "--outage",
        type=seconds,
        default=300.0,
        help="how long tracking, then identity, is away (default: 5m)",
    )
    add(
        "--duration",
        type=seconds,
        help="how long the sending lasts (default: both outages and 3 x max(10s, outage/5))",
    )
    add(
        "--valkey-down",
        type=seconds,
        default=3.0,
        help="how long Valkey stays down after its SIGKILL (default: 3s)",
    )
    add(
        "--restart-after",
        type=seconds,
        default=1.0,
        help="how long a killed worker stays down (default: 1s)",
    )
    add(
        "--job-timeout",
        type=seconds,
        default=5.0,
        help="the workers' job timeout (default: 5s, as security.md §5.1)",
    )
    add(
        "--away",
        type=away_order,
        default=("tracking", "identity"),
        metavar="FIRST,SECOND",
        help="which service is away first (default: tracking,identity)",
    )
    add(
        "--stop-signal",
        type=stop_signal,
        default=signal.SIGKILL,
        metavar="KILL|TERM",
        help="how tracking and identity are stopped (default: KILL, a crash)",
    )
    add(
        "--worker-env",
        type=setting,
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="another setting of the workers (repeatable), e.g. WORKER_RETRY_MAX_DELAY=PT1S",
    )
    add(
        "--give-up",
        type=seconds,
        default=600.0,
        help="a sender stops retrying a delivery after this long (default: 10m)",
    )
    add(
        "--drain-timeout",
        type=seconds,
        default=1800.0,
        help="how long to wait for the queue to drain (default: 30m)",
    )
    add(
        "--senders", type=_positive, default=256, help="deliveries in flight at most (default: 256)"
    )
    add("--seed", type=int, default=2026, help="the chaos schedule's seed (default: 2026)")
    add(
        "--database-url",
        default=os.environ.get("TEST_DATABASE_URL") or os.environ.get("DATABASE_URL"),
        help="a PostgreSQL server, a new database there for each service, dropped after "
        "(default: TEST_DATABASE_URL or DATABASE_URL; else an embedded server started for the "
        "soak, its data in a temporary directory)",
    )
    add("--keep", action="store_true", help="keep the data dir (Valkey's files, logs)")
    args = parser.parse_args(argv)
    gap = max(10.0, args.outage / 5)
    if args.duration is None:
        args.duration = 2 * args.outage + 3 * gap
    if args.duration < 2 * args.outage + 3:
        parser.error("--duration must leave at least 3s beside the two outages")
    if args.database_url and not args.database_url.startswith("postgresql"):
        parser.error("--database-url must name a PostgreSQL server (postgresql://...)")
    return args
