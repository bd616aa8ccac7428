"""The webhooks service's document types its path parameters as its handlers parse them."""

from __future__ import annotations

import httpx

from tests.support.path_types import misdocumented_path_parameters


async def test_path_parameters_are_documented_as_parsed(
    client: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    checked, wrong = await misdocumented_path_parameters(client, auth)
    assert checked > 5
    assert wrong == [], "\n".join(wrong)
