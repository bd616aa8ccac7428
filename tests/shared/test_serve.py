"""``python -m <service>``: what it hands uvicorn, and the collector it leaves behind."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import uvicorn
from cryptography.fernet import Fernet

from shared import redis_pipe, serve
from shared.http_protocol import HttpProtocol
from webhooks.settings import Settings


@pytest.fixture
def ran(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    captured: dict[str, Any] = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **options: captured.update(app=app, **options))
    # The test process keeps its own logging.
    monkeypatch.setattr(serve, "configure_logging", lambda *args, **kwargs: None)
    threshold = gc.get_threshold()
    try:
        yield captured
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()


def test_a_service_runs_under_the_platforms_protocol_with_a_calmer_collector(
    ran: dict[str, Any],
) -> None:
    serve.main(
        app_factory="webhooks.app:create_app",
        settings_factory=lambda: Settings(webhook_secret_keys=Fernet.generate_key().decode()),
        default_port=8103,
        argv=["--port", "9999"],
    )
    assert ran["app"] == "webhooks.app:create_app"
    assert (ran["factory"], ran["port"], ran["http"]) == (True, 9999, HttpProtocol)
    assert (ran["proxy_headers"], ran["access_log"]) == (True, False)
    assert gc.get_threshold()[0] == serve.GC_YOUNG
    assert gc.get_freeze_count() > 0  # what was imported before serving is left alone


def test_the_shortcuts_switch_off_from_the_command_line(
    ran: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(redis_pipe, "DIRECT", True)
    serve.main(
        app_factory="webhooks.app:create_app",
        settings_factory=lambda: Settings(webhook_secret_keys=Fernet.generate_key().decode()),
        default_port=8103,
        argv=["--http", "httptools", "--no-redis-pipe"],
    )
    assert ran["http"] == "httptools"
    assert redis_pipe.DIRECT is False


def test_bad_settings_are_one_line_and_exit_2(
    ran: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    def broken() -> Settings:
        raise ValueError("database_url: not a URL")

    with pytest.raises(SystemExit) as exited:
        serve.main(
            app_factory="webhooks.app:create_app", settings_factory=broken, default_port=1, argv=[]
        )
    assert exited.value.code == 2
    assert capsys.readouterr().err == "invalid settings: database_url: not a URL\n"
    assert ran == {}


def with_two_workers(settings: Callable[[], Settings]) -> object:
    """The exit code of the webhooks service started with ``--workers 2``."""
    with pytest.raises(SystemExit) as exited:
        serve.main(
            app_factory="webhooks.app:create_app",
            settings_factory=settings,
            default_port=1,
            argv=["--workers", "2"],
        )
    return exited.value.code


def test_metrics_are_served_before_uvicorn_starts_and_refuse_several_workers(
    ran: dict[str, Any], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    started: list[tuple[int, str]] = []
    monkeypatch.setattr(
        serve, "start_metrics_server", lambda port, host: started.append((port, host))
    )

    def settings() -> Settings:
        key = Fernet.generate_key().decode()
        return Settings(webhook_secret_keys=key, metrics_port=9103, metrics_host="0.0.0.0")  # noqa: S104

    serve.main(
        app_factory="webhooks.app:create_app", settings_factory=settings, default_port=1, argv=[]
    )
    assert started == [(9103, "0.0.0.0")]  # noqa: S104
    assert ran["app"] == "webhooks.app:create_app"
    ran.clear()
    assert with_two_workers(settings) == 2
    assert capsys.readouterr().err == "METRICS_PORT needs --workers 1\n"
    assert (ran, started) == ({}, [(9103, "0.0.0.0")])  # noqa: S104


def test_tracing_refuses_several_workers(
    ran: dict[str, Any], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")

    def settings() -> Settings:
        return Settings(webhook_secret_keys=Fernet.generate_key().decode())

    assert with_two_workers(settings) == 2
    assert capsys.readouterr().err == "OTEL_EXPORTER_OTLP_ENDPOINT needs --workers 1\n"
    assert ran == {}
