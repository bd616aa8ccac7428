"""Idle memory of a benchmark's servers, process by process, from ``/proc``.

Each process the launcher starts leads a process group of its own (nginx's master and
workers, PostgreSQL's postmaster and backends); a row is one group, its members' memory
summed. RSS counts every page a process has resident, shared libraries and copy-on-write
pages of a forked parent included, so it overstates a group; PSS divides each shared page
among the processes that map it (the sum over every process is the memory really used);
USS is what a process holds alone, what ending it would free. PSS and USS come from
``/proc/<pid>/smaps_rollup`` (Linux 4.14+), readable for our own processes or as root.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")
TARGET_MB = 120.0  # the target for a service's process at rest
MB = 1024 * 1024


@dataclass(frozen=True)
class Usage:
    """One process group's memory in bytes (``pss``/``uss`` ``None`` when unreadable)."""

    name: str
    processes: int
    rss: int
    pss: int | None
    uss: int | None
    python: bool  # a Python process in it: a service, which the target is about


def group_members(pgid: int, proc: Path = PROC) -> list[int]:
    """The pids of process group ``pgid`` (the leader first, if it still runs)."""
    members = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # ended meanwhile
            continue
        # pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses.
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[2]) == pgid:
            members.append(int(entry.name))
    return sorted(members, key=lambda pid: (pid != pgid, pid))


def rollup(pid: int, proc: Path = PROC) -> dict[str, int]:
    """``smaps_rollup``'s counters in bytes (empty when unreadable); ``Rss`` from
    ``status`` when the rollup is not there."""
    values: dict[str, int] = {}
    try:
        lines = (proc / str(pid) / "smaps_rollup").read_text().splitlines()
    except OSError:
        lines = []
    for line in lines[1:]:  # the first line names the address range
        key, _, rest = line.partition(":")
        parts = rest.split()
        if len(parts) == 2 and parts[1] == "kB":
            values[key] = int(parts[0]) * 1024
    if "Rss" not in values:
        try:
            status = (proc / str(pid) / "status").read_text()
        except OSError:
            return values
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                values["Rss"] = int(line.split()[1]) * 1024
    return values


def group_usage(name: str, pgid: int, proc: Path = PROC) -> Usage:
    """The summed memory of process group ``pgid``."""
    members = group_members(pgid, proc) or [pgid]
    rss = 0
    pss: int | None = 0
    uss: int | None = 0
    for pid in members:
        values = rollup(pid, proc)
        rss += values.get("Rss", 0)
        if "Pss" in values and pss is not None and uss is not None:
            pss += values["Pss"]
            uss += values.get("Private_Clean", 0) + values.get("Private_Dirty", 0)
        else:
            pss = uss = None
    return Usage(name, len(members), rss, pss, uss, any(_is_python(p, proc) for p in members))


def _is_python(pid: int, proc: Path) -> bool:
    try:
        argv0 = (proc / str(pid) / "cmdline").read_bytes().split(b"\0")[0]
    except OSError:
        return False
    return os.path.basename(argv0).startswith(b"python")


def measure(groups: Mapping[str, int], proc: Path = PROC) -> list[Usage]:
    """:func:`group_usage` of every ``name: pgid`` in ``groups``, by name."""
    return [group_usage(name, pgid, proc) for name, pgid in sorted(groups.items())]


def format_table(usages: Iterable[tuple[str, Sequence[Usage]]]) -> str:
    """(server, its groups) as an aligned text table in MB, each Python process's RSS (the
    strictest of the three: shared libraries counted in full) against :data:`TARGET_MB`."""
    header = ["server", "process", "procs", "RSS MB", "PSS MB", "USS MB", f"< {TARGET_MB:g} MB"]
    body = []
    for server, groups in usages:
        for usage in groups:
            verdict = ""
            if usage.python:
                verdict = "yes" if usage.rss < TARGET_MB * MB else "NO"
            body.append(
                [
                    server,
                    usage.name,
                    str(usage.processes),
                    _mb(usage.rss),
                    _mb(usage.pss),
                    _mb(usage.uss),
                    verdict,
                ]
            )
    widths = [max(len(line[i]) for line in [header, *body]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        left = [cells[i].ljust(widths[i]) for i in range(2)]
        right = [cells[i].rjust(widths[i]) for i in range(2, len(cells))]
        return "  ".join(left + right).rstrip()

    return "\n".join([line(header), "  ".join("-" * w for w in widths), *map(line, body)])


def _mb(value: int | None) -> str:
    return "-" if value is None else f"{value / MB:.1f}"
