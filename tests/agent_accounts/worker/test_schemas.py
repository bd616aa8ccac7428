"""A worker's documented scope states the rules the request model checks."""

from __future__ import annotations

import uuid

import pytest

from agent_accounts.worker.schemas import WorkerScope
from tests.support.schemas import documented_and_taken

VERSION = str(uuid.uuid4())


@pytest.mark.parametrize(
    "scope",
    [
        {"claims": [{"kind": "agent"}]},
        {"claims": [{"kind": "agent"}, {"kind": "agent"}]},
        {"claims": [{"kind": "agent", "agent_version_id": VERSION}, {"kind": "agent"}]},
        {"claims": [{"kind": "agent"}], "selectors": []},
        {"claims": [{"kind": "agent"}], "selectors": [{"key": "a", "values": ["b"]}]},
    ],
)
def test_the_document_takes_the_scopes_the_model_takes(scope):
    documented, taken = documented_and_taken(WorkerScope, scope)
    assert documented == taken
