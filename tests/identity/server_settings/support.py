"""The reference's wire schemas (ZenML 0.96.3's OpenAPI document) as validators, and a user
who is not an admin."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import httpx
import jsonschema_rs

from tests.identity.conftest import Login, bearer

SCHEMAS = Path(__file__).with_name("reference_schemas.json")
PASSWORD = "a long enough password"


@cache
def _validator(name: str) -> Any:
    document = json.loads(SCHEMAS.read_text())
    schema = {"$defs": document["$defs"], "$ref": f"#/$defs/{name}"}
    # Formats off: the reference's own datetimes carry no zone, which RFC 3339's
    # "date-time" requires.
    return jsonschema_rs.Draft202012Validator(schema, validate_formats=False)


def assert_reference_shape(name: str, body: Any) -> None:
    """``body`` is valid for the reference's schema ``name``."""
    errors = [str(e) for e in _validator(name).iter_errors(body)]
    assert not errors, errors


async def member(identity: httpx.AsyncClient, login: Login, name: str = "alice") -> str:
    """A token of a new active user who is not an admin."""
    response = await identity.post(
        "/api/v1/users",
        json={"name": name, "is_admin": False, "password": PASSWORD, "active": True},
        headers=bearer(await login()),
    )
    assert response.status_code == 200, response.text
    return await login(name, PASSWORD)
