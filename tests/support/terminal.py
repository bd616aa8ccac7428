"""Commands run in a pseudo-terminal (through ``script``), as a person would run them:
what they print is read as it comes, and what is written to their stdin is typed."""

from __future__ import annotations

import os
import re
import selectors
import shlex
import subprocess
import time
from collections.abc import Mapping

import pytest


def in_terminal(argv: list[str], env: Mapping[str, str]) -> subprocess.Popen[bytes]:
    """``argv`` with a terminal as its stdin, stdout and stderr (all read on stdout)."""
    return subprocess.Popen(
        ["script", "-qfec", shlex.join(argv), "/dev/null"],
        env=dict(env),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )


def type_line(process: subprocess.Popen[bytes], line: str) -> None:
    assert process.stdin is not None
    process.stdin.write(line.encode() + b"\n")
    process.stdin.flush()


def read_until(process: subprocess.Popen[bytes], pattern: re.Pattern[str], timeout: float) -> str:
    """The process's output up to the first match of ``pattern`` (fails after ``timeout``)."""
    assert process.stdout is not None
    seen = b""
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        while not pattern.search(seen.decode(errors="replace")):
            left = deadline - time.monotonic()
            if left <= 0 or (process.poll() is not None and not selector.select(0)):
                pytest.fail(f"the CLI did not show {pattern.pattern}:\n{seen.decode()}")
            if selector.select(min(left, 0.5)):
                chunk = os.read(process.stdout.fileno(), 65536)
                if not chunk:
                    pytest.fail(f"the CLI closed its output early:\n{seen.decode()}")
                seen += chunk
    return seen.decode(errors="replace")


def finish(process: subprocess.Popen[bytes], timeout: float) -> str:
    """The rest of the output once the process exits (killed after ``timeout``)."""
    try:
        output, _ = process.communicate(timeout=timeout)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    return output.decode(errors="replace")
