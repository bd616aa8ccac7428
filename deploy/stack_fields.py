"""The fields of ``deploy/stack.toml``'s model (:mod:`deploy.config`) and the one line an
invalid file is reported as.

Each field type checks its value and says what is wrong in the words the stack file's
reader needs (``port 70000 is outside 1-65535``); :func:`first_problem` turns pydantic's
first error into ``<entry>: <problem>``, the entry named as the file names it
(``service 'tracking'``, ``[valkey]``, ``entrypoint 'platform' login``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, StrictInt, StrictStr, ValidationInfo
from pydantic_core import ErrorDetails, PydanticCustomError

__all__ = [
    "ENV_NAME",
    "ENV_PREFIX",
    "MAX_REPLICAS",
    "MODULE",
    "BodySize",
    "EnvTable",
    "Name",
    "Port",
    "Routes",
    "env_table",
    "first_problem",
    "matching",
    "names",
    "refuse",
    "replica_count",
    "secret_kinds",
]

_NAME = re.compile(r"^[a-z][a-z0-9-]{0,40}$")
MODULE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]*$")
ENV_PREFIX = re.compile(r"^[A-Z][A-Z0-9_]*_$")
# Route prefixes end up verbatim in nginx `location` lines: keep them to plain path text.
_ROUTE = re.compile(r"^/([A-Za-z0-9._~-]+(/[A-Za-z0-9._~-]+)*)?$")
_BODY_SIZE = re.compile(r"^[0-9]+[km]?$")
_SECRET_KINDS = ("fernet", "token")
MAX_REPLICAS = 9


def refuse(message: str) -> PydanticCustomError:
    """A validation error whose message is ``message`` as it is (it names the key)."""
    return PydanticCustomError("stack", "{message}", {"message": message})


def matching(
    pattern: re.Pattern[str], rule: str, *, empty: bool = False
) -> Callable[[str, ValidationInfo], str]:
    """A check that a string field matches ``pattern`` (or is empty, when ``empty``);
    ``rule`` ends the message."""

    def check(value: str, info: ValidationInfo) -> str:
        if not (pattern.match(value) or (empty and not value)):
            raise refuse(f"{info.field_name} {value!r} {rule}")
        return value

    return check


def _in_port_range(value: int, info: ValidationInfo) -> int:
    if not 1 <= value <= 65535:
        raise refuse(f"{info.field_name} {value} is outside 1-65535")
    return value


def replica_count(value: int, info: ValidationInfo) -> int:
    if not 1 <= value <= MAX_REPLICAS:
        raise refuse(f"replicas must be a whole number from 1 to {MAX_REPLICAS}")
    return value


def names(pattern: re.Pattern[str], entry: str, rule: str) -> Callable[[object], object]:
    """A check of each entry of a list: a string matching ``pattern``."""

    def check(value: object) -> object:
        for item in value if isinstance(value, list) else ():
            if not isinstance(item, str) or not pattern.match(item):
                raise refuse(f"{entry} {item!r} {rule}")
        return value

    return check


def env_table(value: object) -> object:
    """``NAME = "value"`` pairs (the field's own type error covers a non-table)."""
    if isinstance(value, dict):
        for key, item in value.items():
            if not ENV_NAME.match(key) or not isinstance(item, str):
                raise refuse(f"{key} must be an upper-case name with a string value")
    return value


def secret_kinds(value: object) -> object:
    for var, kind in value.items() if isinstance(value, dict) else ():
        if isinstance(kind, str) and kind not in _SECRET_KINDS:
            raise refuse(f"secret {var} has kind {kind!r}, not one of {', '.join(_SECRET_KINDS)}")
    return value


Name = Annotated[
    StrictStr, AfterValidator(matching(_NAME, "must be lower-case letters, digits, '-'"))
]
Port = Annotated[StrictInt, AfterValidator(_in_port_range)]
BodySize = Annotated[StrictStr, AfterValidator(matching(_BODY_SIZE, "is not like '10m'"))]
EnvTable = Annotated[dict[str, str], BeforeValidator(env_table)]
Routes = Annotated[
    tuple[str, ...],
    BeforeValidator(names(_ROUTE, "route", "is not a plain path prefix like /a/b")),
]


_TYPES = {
    "int_type": "int",
    "string_type": "str",
    "bool_type": "bool",
    "list_type": "list",
    "tuple_type": "list",
    "dict_type": "table",
    "model_type": "table",
    "model_attributes_type": "table",
}
_TABLES = {"gateway", "valkey", "postgres"}


def first_problem(errors: list[ErrorDetails], raw: Mapping[str, Any]) -> str:
    """The first of pydantic's errors as one line: the entry it is in, then the problem
    (unknown keys of one entry are named together)."""
    first = errors[0]
    loc = first["loc"]
    where, key = _where(loc, raw)
    kind = first["type"]
    if kind == "extra_forbidden":
        parent = loc[:-1]
        unknown = sorted(
            str(e["loc"][-1]) for e in errors if e["type"] == kind and e["loc"][:-1] == parent
        )
        return f"{where}: unknown key(s) {', '.join(unknown)}"
    if kind == "missing":
        if len(loc) == 1 and key in _TABLES:
            return f"{where}: a [{key}] table is required"
        return f"{where}: {key} is required"
    if len(loc) == 1 and key in {"entrypoint", "service"} and kind in _TYPES:
        return f"{key} must be an array of tables ([[{key}]])"
    if kind == "literal_error":
        if not isinstance(first["input"], str):
            return f"{where}: {key} must be of type str"
        allowed = re.findall(r"'([^']*)'", str((first.get("ctx") or {}).get("expected", "")))
        return f"{where}: {key} must be one of {', '.join(allowed)}"
    if kind in _TYPES:
        if key is None:
            return f"{where}: must be a table"
        return f"{where}: {key} must be of type {_TYPES[kind]}"
    if key in {"env", "secrets"}:
        where = f"{where} {key}"
    elif key == "environment" and len(loc) == 1:
        where = "[environment]"
    return f"{where}: {first['msg']}"


def _where(loc: tuple[int | str, ...], raw: Mapping[str, Any]) -> tuple[str, str | None]:
    """The entry an error's location is in (``service 'tracking'``, ``[valkey]``,
    ``entrypoint 'platform' login``) and the key it names, if any."""
    if not loc:
        return "top level", None
    head = str(loc[0])
    if len(loc) == 1:
        return "top level", head
    if head in {"entrypoint", "service"} and isinstance(loc[1], int):
        item = raw[head][loc[1]] if isinstance(raw.get(head), list) else None
        name = item.get("name") if isinstance(item, dict) else None
        where = f"{head} {name!r}" if isinstance(name, str) and _NAME.match(name) else None
        where = where or f"[[{head}]] #{loc[1] + 1}"
        rest = [str(part) for part in loc[2:]]
    else:
        where, rest = f"[{head}]", [str(part) for part in loc[1:]]
    if rest and rest[0] in {"login", "env", "secrets"} and (len(rest) > 1 or rest[0] == "login"):
        return f"{where} {rest[0]}", rest[-1] if len(rest) > 1 else None
    return where, rest[-1] if rest else None
