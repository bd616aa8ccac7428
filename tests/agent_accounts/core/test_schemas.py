"""Every datetime an agent-run response carries is written as kitaru's server writes it:
UTC, ending in ``Z``."""

from __future__ import annotations

import datetime as dt
import importlib
import inspect
import pkgutil
import re
import types
import typing
from typing import Any

import httpx
from pydantic import AfterValidator, BaseModel

import agent_accounts
from agent_accounts.core.schemas import Timestamp, aware_utc
from shared.types import type_adapter
from tests.agent_accounts.conftest import NewKey, bearer, register_worker

# pydantic's form for aware UTC, as kitaru's server sends it: the fraction only when non-zero.
KITARU_FORM = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{6})?Z$")
LOOKS_LIKE_A_DATETIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d")


def datetimes(value: Any, path: str = "") -> dict[str, str]:
    """Every string in a JSON body that looks like a datetime, by its path."""
    found: dict[str, str] = {}
    if isinstance(value, dict):
        for key, item in value.items():
            found.update(datetimes(item, f"{path}.{key}"))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found.update(datetimes(item, f"{path}[{index}]"))
    elif isinstance(value, str) and LOOKS_LIKE_A_DATETIME.match(value):
        found[path] = value
    return found


def test_timestamp_is_written_in_utc_ending_in_z():
    adapter = type_adapter(Timestamp)
    plus_one = dt.timezone(dt.timedelta(hours=1))

    assert (
        adapter.dump_json(adapter.validate_python(dt.datetime(2026, 1, 1, 1, tzinfo=plus_one)))
        == b'"2026-01-01T00:00:00Z"'
    )
    assert (
        adapter.dump_json(adapter.validate_python(dt.datetime(2026, 1, 1, 0, 0, 0, 4500)))
        == b'"2026-01-01T00:00:00.004500Z"'
    )


async def test_every_datetime_of_account_key_and_worker_responses_ends_in_z(
    client: httpx.AsyncClient, admin: dict[str, str], new_key: NewKey
):
    key = await new_key()
    rotated = await client.post(
        f"/api/v1/api-keys/{key['id']}/rotate", json={"retain_period_minutes": 5}, headers=admin
    )
    new = rotated.json()["key"]
    # Used once, so that last_used is set too.
    assert (await client.get("/api/v1/accounts/me", headers=bearer(new))).status_code == 200
    worker = await register_worker(client, new)
    bodies = {
        "me": (await client.get("/api/v1/accounts/me", headers=admin)).json(),
        "accounts": (await client.get("/api/v1/accounts", headers=admin)).json(),
        "rotated": rotated.json(),
        "keys": (await client.get("/api/v1/api-keys", headers=admin)).json(),
        "worker": worker,
        "workers": (await client.get("/api/v1/workers", headers=admin)).json(),
    }

    found = datetimes(bodies)
    for field in (
        ".me.created",
        ".me.updated",
        ".accounts.items[0].created",
        ".rotated.last_rotated",
        ".keys.items[0].last_used",
        ".keys.items[0].last_rotated",
        ".worker.token_expires_at",
        ".worker.worker.last_seen_at",
        ".workers.items[0].created",
    ):
        assert field in found, (field, sorted(found))
    assert {path: text for path, text in found.items() if not KITARU_FORM.match(text)} == {}


def _bare_datetime(hint: Any) -> bool:
    """Whether ``hint`` holds a datetime that is not a :data:`Timestamp`."""
    if hint is dt.datetime:
        return True
    if typing.get_origin(hint) is typing.Annotated:
        base, *metadata = typing.get_args(hint)
        ours = any(isinstance(m, AfterValidator) and m.func is aware_utc for m in metadata)
        if base is dt.datetime:
            return not ours
        return _bare_datetime(base)
    if typing.get_origin(hint) in (typing.Union, types.UnionType, list, dict, tuple):
        return any(_bare_datetime(arg) for arg in typing.get_args(hint))
    return False


def test_every_datetime_field_of_the_service_models_is_a_timestamp():
    bare: list[str] = []
    for module_info in pkgutil.walk_packages(agent_accounts.__path__, "agent_accounts."):
        if not module_info.name.endswith(".schemas"):
            continue
        module = importlib.import_module(module_info.name)
        for name, model in inspect.getmembers(module, inspect.isclass):
            if not issubclass(model, BaseModel) or model.__module__ != module.__name__:
                continue
            hints = typing.get_type_hints(model, include_extras=True)
            bare += [f"{name}.{f}" for f in model.model_fields if _bare_datetime(hints[f])]

    assert bare == []
