"""The service connector types this server lists, as data (``catalog.json``): each type's
auth methods with their configuration schemas, and its resource types. They are the types
the reference's server image lists, under the same ids, so that the unmodified client
renders and validates them; the descriptions are ours.

:func:`configure` applies a type's rules to a connector as the reference does: the auth
method and resource type must be the type's, required fields present; fields whose
schema is a password are the secrets, kept apart (and sealed) from the rest.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shared.errors import BadRequest, NotFound

DATA = Path(__file__).with_name("catalog.json")


class ConnectorTypeNotFound(NotFound):
    def __init__(self, connector_type: str) -> None:
        super().__init__(
            f"Service connector type {connector_type} is not available. Please make sure "
            "the corresponding packages and/or ZenML integration are installed and try "
            "again."
        )


class InvalidConfiguration(BadRequest):
    """The reference's ``ValueError`` for a connector its type refuses."""

    wire_name = "ValueError"


@functools.cache
def connector_types() -> tuple[dict[str, Any], ...]:
    """Every type, as served by ``/service_connector_types`` (``local``: the server
    carries the type; ``remote``: false, as the reference's server answers)."""
    types = json.loads(DATA.read_text())
    return tuple({**t, "local": True, "remote": False} for t in types)


def find_types(
    connector_type: str | None, resource_type: str | None, auth_method: str | None
) -> list[dict[str, Any]]:
    """The types matching every filter given (a type matches a resource type or auth
    method that one of its own has)."""
    return [
        t
        for t in connector_types()
        if (connector_type is None or t["connector_type"] == connector_type)
        and (
            resource_type is None
            or any(r["resource_type"] == resource_type for r in t["resource_types"])
        )
        and (auth_method is None or any(a["auth_method"] == auth_method for a in t["auth_methods"]))
    ]


def get_type(connector_type: str) -> dict[str, Any]:
    for t in connector_types():
        if t["connector_type"] == connector_type:
            return t
    raise ConnectorTypeNotFound(connector_type)


def _invalid(reason: str) -> InvalidConfiguration:
    return InvalidConfiguration(f"connector configuration is not valid: {reason}")


@dataclass(frozen=True)
class Resources:
    """What a connector reaches: its resource types, the one resource id (if any) and
    whether its one resource type has several instances."""

    resource_types: list[str]
    resource_id: str | None
    supports_instances: bool


def resources(
    spec: dict[str, Any],
    auth_method: str,
    resource_types: list[str] | None,
    resource_id: str | None,
) -> Resources:
    """The reference's rules: one resource type names it (it must take ``auth_method``);
    none or several make a multi-type connector of all the type's resource types, without
    a resource id."""
    methods = [a["auth_method"] for a in spec["auth_methods"]]
    if auth_method not in methods:
        raise _invalid(
            f"connector type '{spec['connector_type']}' does not support the '{auth_method}' "
            f"authentication method. Supported authentication methods are: {methods}."
        )
    by_type = {r["resource_type"]: r for r in spec["resource_types"]}
    if resource_types is not None and len(resource_types) == 1:
        resource_type = resource_types[0]
        if resource_type not in by_type:
            raise _invalid(
                f"connector type '{spec['connector_type']}' does not support resource type "
                f"'{resource_type}'. Supported resource types are: {list(by_type)}."
            )
        resource = by_type[resource_type]
        if auth_method not in resource["auth_methods"]:
            raise _invalid(
                f"the '{spec['connector_type']}' connector type does not support the "
                f"'{auth_method}' authentication method for the '{resource_type}' resource "
                f"type. Supported authentication methods are: {resource['auth_methods']}."
            )
        return Resources([resource_type], resource_id, bool(resource["supports_instances"]))
    return Resources(list(by_type), None, False)


def _attribute(schema: dict[str, Any]) -> tuple[bool, str]:
    """Whether a configuration attribute is a secret, and its JSON type."""
    options = [a for a in schema.get("anyOf", []) if a.get("type", "string") != "null"]
    spec = options[0] if len(options) == 1 else schema
    return spec.get("format", "") == "password", str(spec.get("type", "string"))


def split_configuration(
    spec: dict[str, Any], auth_method: str, configuration: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, str]]:
    """The auth method's fields of ``configuration``, as (plain fields, secret fields),
    each of its schema's type; other keys are dropped, as the reference drops them."""
    method = next(a for a in spec["auth_methods"] if a["auth_method"] == auth_method)
    schema = method["config_schema"]
    required = set(schema.get("required", []))
    plain: dict[str, Any] = {}
    secrets: dict[str, str] = {}
    for name, attribute in schema.get("properties", {}).items():
        secret, kind = _attribute(attribute)
        value = configuration.get(name)
        if value is None:
            if name in required:
                raise _invalid(f"missing required attribute '{name}'")
            continue
        if secret:
            if not isinstance(value, str):
                raise _invalid(f"attribute '{name}' is a secret but is not a string")
            secrets[name] = value
            continue
        plain[name] = _typed(name, kind, value)
    return plain, secrets


_TRUE = frozenset({"true", "1", "yes", "on"})
_FALSE = frozenset({"false", "0", "no", "off"})


def _typed(name: str, kind: str, value: Any) -> Any:
    """``value`` as the schema's ``kind`` says, read from text where the CLI sends text
    (``--insecure=true``, ``--policy_arns=a,b``); 400 when it is not one."""
    if isinstance(value, str) and kind != "string":
        text = value.strip()
        if kind == "boolean" and text.lower() in _TRUE | _FALSE:
            return text.lower() in _TRUE
        if kind in ("array", "object", "integer", "number"):
            try:
                value = json.loads(text)
            except json.JSONDecodeError:
                if kind == "array":
                    return value.split(",")
    expected: dict[str, tuple[type, ...]] = {
        "string": (str,),
        "boolean": (bool,),
        "integer": (int,),
        "number": (int, float),
        "array": (list,),
        "object": (dict,),
    }
    types = expected.get(kind)
    wrong_bool = isinstance(value, bool) and kind in ("integer", "number")
    if types is not None and (not isinstance(value, types) or wrong_bool):
        raise _invalid(f"attribute '{name}' is not a valid {kind}")
    return value
