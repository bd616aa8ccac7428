"""Identity's documented names state the rule its request models check."""

from __future__ import annotations

import pytest

from identity.api_key.schemas import APIKeyRequest
from identity.service_account.schemas import ServiceAccountRequest
from identity.user.schemas import UserRequest
from tests.support.schemas import documented_and_taken


@pytest.mark.parametrize("model", [UserRequest, ServiceAccountRequest, APIKeyRequest])
@pytest.mark.parametrize(
    "name", ["alice", "a b", " a", "", " ", "a\tb", "a\nb", "\x1c", "\xa0", "é"]
)
def test_the_document_takes_the_names_the_model_takes(model, name):
    documented, taken = documented_and_taken(model, {"name": name})
    assert documented == taken, name
