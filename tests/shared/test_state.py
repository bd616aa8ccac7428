"""A service's typed request state (:mod:`shared.state`), built from the lifespan's state
and read back from a request."""

from __future__ import annotations

from dataclasses import dataclass

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
