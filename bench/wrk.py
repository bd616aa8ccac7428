"""Driving ``wrk`` (Debian's package) from the benchmarks: a load generator in C whose own
cost per request is tens of microseconds, where a Python sender costs about a millisecond
of CPU and, sharing two cores with the servers, caps what it can show (see
``shared/reference/performance.md``).

The requests of one measurement are given as data; a Lua script cycles through them on every
connection. ``{n}`` in a path or body becomes a number unique within the run (a per-thread
prefix and a counter), for creates that need unique names. The script's ``done`` hook prints
one JSON line with the counts and the latency percentiles, which :func:`run` parses.
"""

from __future__ import annotations

import json
import resource
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

RESULT_MARK = "WRK-RESULT "


class WrkError(Exception):
    """wrk is missing, failed, or printed no result."""


@dataclass(frozen=True)
class WrkRequest:
    method: str
    path: str  # with its query string
    body: str | None = None


@dataclass(frozen=True)
class WrkResult:
    requests: int
    seconds: float
    errors: int  # connect, read, write and timeout errors
    non_2xx: int  # answers with a status of 400 or more (wrk: "status" errors)
    p50_ms: float
    p99_ms: float
    client_cpu: float = 0.0  # seconds of wrk's CPU (user + system)
    p95_ms: float = 0.0

    @property
    def rps(self) -> float:
        return self.requests / self.seconds if self.seconds > 0 else 0.0


def _binary() -> str:
    found = shutil.which("wrk")
    if found is None:
        raise WrkError("wrk is not installed (Debian: apt-get install wrk)")
    return found


def available() -> bool:
    return shutil.which("wrk") is not None


def version() -> str:
    """``wrk 4.1.0`` (its first line of ``-v``), or ``wrk`` when it says nothing."""
    done = subprocess.run([_binary(), "-v"], capture_output=True, text=True, check=False)
    first = (done.stdout or done.stderr).strip().splitlines()
    return first[0].split(" [")[0] if first else "wrk"


def _lua_string(text: str) -> str:
    return json.dumps(text)  # a JSON string literal is a valid Lua string literal here


def script(requests: Sequence[WrkRequest], headers: Mapping[str, str]) -> str:
    """The Lua script for ``requests`` (cycled) with ``headers`` on every request."""
    if not requests:
        raise WrkError("no requests to send")
    rows = ",\n".join(
        "  {"
        + f"method = {_lua_string(r.method)}, path = {_lua_string(r.path)}, "
        + f"body = {_lua_string(r.body) if r.body is not None else 'nil'}"
        + "}"
        for r in requests
    )
    header_lines = "\n".join(
        f"wrk.headers[{_lua_string(k)}] = {_lua_string(v)}" for k, v in headers.items()
    )
    return f"""
local requests = {{
{rows}
}}
{header_lines}
local threads = {{}}
local thread_count = 0

function setup(thread)
  thread_count = thread_count + 1
  thread:set("thread_id", thread_count)
  table.insert(threads, thread)
end

local counter = 0
local index = 0
local prefix = ""

function init(args)
  math.randomseed(os.time() + (thread_id or 0))
  prefix = string.format("%d-%d-", thread_id or 0, math.random(1, 1000000000))
end

local function fill(text)
  if text == nil then return nil end
  if string.find(text, "{{n}}", 1, true) then
    counter = counter + 1
    return (string.gsub(text, "{{n}}", prefix .. counter))
  end
  return text
end

function request()
  index = index % #requests + 1
  local r = requests[index]
  local body = fill(r.body)
  return wrk.format(r.method, fill(r.path), nil, body)
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '{RESULT_MARK}{{"requests": %d, "duration_us": %d, "errors": %d, "status": %d, '
      .. '"p50_us": %d, "p95_us": %d, "p99_us": %d}}\\n',
    summary.requests, summary.duration, e.connect + e.read + e.write + e.timeout, e.status,
    latency:percentile(50), latency:percentile(95), latency:percentile(99)))
end
"""


def parse(output: str) -> WrkResult:
    for line in output.splitlines():
        if line.startswith(RESULT_MARK):
            data = json.loads(line.removeprefix(RESULT_MARK))
            return WrkResult(
                requests=data["requests"],
                seconds=data["duration_us"] / 1e6,
                errors=data["errors"],
                non_2xx=data["status"],
                p50_ms=data["p50_us"] / 1000,
                p99_ms=data["p99_us"] / 1000,
                p95_ms=data.get("p95_us", 0) / 1000,
            )
    raise WrkError(f"wrk printed no result: {output.strip()[-300:]}")


def run(
    base_url: str,
    requests: Sequence[WrkRequest],
    *,
    connections: int,
    seconds: float,
    headers: Mapping[str, str],
    threads: int | None = None,
) -> WrkResult:
    """Send ``requests`` (cycled) to ``base_url`` over ``connections`` keep-alive
    connections, each with one request in flight, for ``seconds``."""
    binary = _binary()
    threads = max(1, min(threads or connections, connections, 2))
    with tempfile.TemporaryDirectory(prefix="wrk-") as tmp:
        lua = Path(tmp) / "requests.lua"
        all_headers = {"Content-Type": "application/json", **headers}
        lua.write_text(script(requests, all_headers))
        command = [
            binary,
            f"-t{threads}",
            f"-c{connections}",
            f"-d{max(1, round(seconds))}s",
            "--timeout",
            "30s",
            "-s",
            str(lua),
            base_url,
        ]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise WrkError(f"wrk exited with {done.returncode}: {done.stderr.strip()[-300:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return replace(parse(done.stdout), client_cpu=cpu)
