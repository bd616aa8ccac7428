"""A service's typed request state (:mod:`shared.state`), built from the lifespan's state
and read back from a request."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from starlette.requests import Request

from shared.state import STATE_KEY, ServiceState


@dataclass(frozen=True, slots=True)
class ExampleState(ServiceState):
    settings: str
    clock: int


@dataclass(frozen=True, slots=True)
class OtherState(ServiceState):
    settings: str


def request_with(state: object) -> Request:
    return Request(
        {"type": "http", "method": "GET", "path": "/", "headers": [], "state": {STATE_KEY: state}}
    )


def test_from_lifespan_takes_the_fields_it_declares():
    state = ExampleState.from_lifespan({"settings": "s", "clock": 1, "redis": object()})
    assert state == ExampleState(settings="s", clock=1)


def test_from_lifespan_names_every_key_the_lifespan_lacks():
    with pytest.raises(LookupError, match="ExampleState: the lifespan provides no clock"):
        ExampleState.from_lifespan({"settings": "s"})


def test_of_reads_the_state_a_request_carries():
    state = ExampleState(settings="s", clock=1)
    assert ExampleState.of(request_with(state)) is state
    assert ExampleState.of_scope(request_with(state).scope) is state


def test_of_refuses_another_services_state():
    with pytest.raises(TypeError, match="is a OtherState, not ExampleState"):
        ExampleState.of(request_with(OtherState(settings="s")))


def test_services_read_the_lifespans_state_only_through_their_state_class():
    root = Path(__file__).resolve().parents[2] / "services"
    raw = re.compile(
        r"\b(?:request|conn|connection)\.state\b|scope\[\"state\"\]\[\"(?!"
        + re.escape(STATE_KEY)
        + ")"
    )
    found = [
        f"{path.relative_to(root)}:{number}"
        for path in sorted(root.rglob("*.py"))
        if "__pycache__" not in path.parts
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if raw.search(line)
    ]
    assert found == []
