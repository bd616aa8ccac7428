"""``bench/wrk.py``: the Lua script it writes and the result it reads, against a real
server when wrk is installed."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from bench import wrk
from tests.support.waiting import wait_for


def test_parse_reads_the_done_line_among_wrks_own_output():
    output = (
        "Running 1s test @ http://127.0.0.1:1/\n  1 threads and 1 connections\n"
        f'{wrk.RESULT_MARK}{{"requests": 500, "duration_us": 2000000, "errors": 1, '
        '"status": 3, "p50_us": 1500, "p99_us": 9000}\n'
    )
    result = wrk.parse(output)
    assert result == wrk.WrkResult(500, 2.0, 1, 3, 1.5, 9.0)
    assert result.rps == 250.0


def test_parse_without_a_result_is_an_error():
    with pytest.raises(wrk.WrkError, match="no result"):
        wrk.parse("unable to connect to 127.0.0.1:1 Connection refused\n")


def test_script_quotes_paths_bodies_and_headers():
    lua = wrk.script(
        [wrk.WrkRequest("POST", '/a?q="x"', '{"name": "n-{n}"}')], {"Authorization": "Bearer t"}
    )
    assert 'path = "/a?q=\\"x\\""' in lua
    assert 'body = "{\\"name\\": \\"n-{n}\\"}"' in lua
    assert 'wrk.headers["Authorization"] = "Bearer t"' in lua


def test_no_requests_is_an_error():
    with pytest.raises(wrk.WrkError):
        wrk.script([], {})


@pytest.fixture
def server() -> Iterator[tuple[str, list[str]]]:
    names: list[str] = []

    async def create(request: Request) -> JSONResponse:
        names.append(json.loads(await request.body())["name"])
        return JSONResponse({"ok": True})

    async def missing(_request: Request) -> JSONResponse:
        return JSONResponse({"detail": "no"}, status_code=404)

    app = Starlette(routes=[Route("/create", create, methods=["POST"]), Route("/gone", missing)])
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
    instance = uvicorn.Server(config)
    thread = threading.Thread(target=instance.run, daemon=True)
    thread.start()
    wait_for(lambda: instance.started or not thread.is_alive(), "uvicorn started", within=10)
    assert instance.started, "uvicorn did not start (its log says why)"
    try:
        yield f"http://127.0.0.1:{port}", names
    finally:
        instance.should_exit = True
        thread.join(10)


@pytest.mark.skipif(not wrk.available(), reason="wrk is not installed")
def test_run_sends_unique_bodies_and_counts_failures(server: tuple[str, list[str]]):
    base_url, names = server
    requests = [
        wrk.WrkRequest("POST", "/create", '{"name": "made-{n}"}'),
        wrk.WrkRequest("GET", "/gone"),
    ]
    result = wrk.run(base_url, requests, connections=2, seconds=1, headers={"X-Test": "1"})
    assert result.requests > 10
    assert result.errors == 0
    assert result.non_2xx == pytest.approx(result.requests / 2, abs=2)
    assert len(names) > 5
    assert len(set(names)) == len(names)  # {n} is unique across connections
    assert all(name.startswith("made-") and "{n}" not in name for name in names)
    assert 0 < result.p50_ms <= result.p99_ms
