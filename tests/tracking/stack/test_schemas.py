"""The documented stack composition states the rules the request models check."""

from __future__ import annotations

import uuid

import pytest

from tests.support.schemas import documented_and_taken
from tracking.stack.schemas import StackRequest, StackUpdate

ONE = [str(uuid.uuid4())]
TWO = [str(uuid.uuid4()), str(uuid.uuid4())]
COMPOSITIONS = [
    {"orchestrator": ONE, "artifact_store": ONE},
    {"orchestrator": ONE, "artifact_store": ONE, "alerter": TWO},
    {"orchestrator": ONE},
    {"orchestrator": [], "artifact_store": ONE},
    {"orchestrator": TWO, "artifact_store": ONE},
    {},
]


@pytest.mark.parametrize("model", [StackRequest, StackUpdate])
@pytest.mark.parametrize("components", COMPOSITIONS)
def test_the_document_takes_the_compositions_the_model_takes(model, components):
    documented, taken = documented_and_taken(model, {"name": "s", "components": components})
    assert documented == taken
