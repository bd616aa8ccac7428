"""The local stack launched as a real process, and finding what it started (/proc)."""

from __future__ import annotations

import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass
class LaunchedStack:
    """A running ``python -m deploy.local``: its log, ports and children's process groups."""

    process: subprocess.Popen[bytes]
    data_dir: Path
    log: Path
    ports: dict[str, int]
    children: dict[str, int]

    def url(self, entrypoint: str, path: str) -> str:
        return f"http://127.0.0.1:{self.ports[entrypoint]}{path}"

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def log_tail(self, lines: int = 60) -> str:
        return "\n".join(self.output().splitlines()[-lines:])


def live_processes(groups: set[int], marker: str) -> list[str]:
    """Non-zombie processes in one of ``groups`` or whose command line mentions ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue  # exited while we looked
        # Fields after the command name, which is in parentheses and may contain spaces.
        state, _ppid, pgrp = stat.rsplit(")", 1)[1].split()[:3]
        if state != "Z" and (int(pgrp) in groups or marker in cmdline):
            found.append(f"{entry.name}: {cmdline.strip()}")
    return found


def port_free(port: int) -> bool:
    """Whether a listener could bind ``port`` on loopback now."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True
