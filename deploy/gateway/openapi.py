"""One OpenAPI document per gateway entrypoint, merged from its services' documents.

Pure functions over already-built documents (:mod:`deploy.gateway.docs` builds them).
For an entrypoint, :func:`merge` keeps from each service's document only the paths the
gateway routes to that service (:func:`route_owner`: the longest matching prefix of
``deploy/stack.toml``, as nginx picks its location; the entrypoint's ``unimplemented``
prefixes, answered by the gateway itself, and internal paths no route reaches are left
out), with the components those paths use.

Components are merged by name. The same name with the same schema (the shared error
shapes, a model of ``shared``) is kept once. The same name with different schemas (each
service's own ``DeleteQuery``), or with a schema that refers to such a name, is a clash:
each service's variant is renamed ``<service>.<Name>`` and that service's references
follow, so no reference changes meaning and the document stays valid as others add
routes. What cannot be renamed without changing the wire (an ``operationId`` the clients
see, a security scheme that operations name) must agree, or :class:`MergeError` says
which services disagree.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from deploy.config import Entrypoint, Stack

Document = dict[str, Any]
# Top-level keys a service's document may have; anything else is refused, not dropped.
_KNOWN_KEYS = {"openapi", "info", "paths", "components", "tags"}
# Component sections operations point into with "$ref" (security schemes are named).
_REF_PREFIX = "#/components/"


class MergeError(Exception):
    """The services' documents cannot be merged into one (the message says why)."""


def route_owner(stack: Stack, entrypoint: Entrypoint, path: str) -> str | None:
    """The web service the gateway sends ``path`` to on ``entrypoint``, or ``None`` when
    the gateway answers it itself (an unimplemented family, or no route: a 404)."""
    best: tuple[int, str | None] | None = None
    claims: list[tuple[str, str | None]] = [(p, None) for p in entrypoint.unimplemented]
    claims += [
        (route, service.name)
        for service in stack.web_services
        if service.entrypoint == entrypoint.name
        for route in service.routes
    ]
    for prefix, owner in claims:
        if prefix == "/" or path == prefix or path.startswith(f"{prefix}/"):
            length = 0 if prefix == "/" else len(prefix)
            if best is None or length > best[0]:
                best = (length, owner)
    return None if best is None else best[1]


def merge(stack: Stack, entrypoint: Entrypoint, documents: Mapping[str, Document]) -> Document:
    """The entrypoint's document from ``documents`` (web service name → its document).

    A service of the entrypoint missing from ``documents`` contributes nothing; the
    ``info`` version is the one every included document reports.
    """
    services = [
        s.name
        for s in stack.web_services
        if s.entrypoint == entrypoint.name and s.name in documents
    ]
    if not services:
        raise MergeError(f"entrypoint {entrypoint.name!r}: no service document to merge")
    for name in services:
        unknown = set(documents[name]) - _KNOWN_KEYS
        if unknown:
            raise MergeError(f"{name}'s document has top-level {sorted(unknown)}: not merged")
    kept = {
        name: {
            path: item
            for path, item in documents[name].get("paths", {}).items()
            if route_owner(stack, entrypoint, path) == name
        }
        for name in services
    }
    used = {name: _reachable(documents[name], kept[name]) for name in services}
    renames = _clashes(services, documents, used)

    paths: Document = {}
    for name in services:
        rename = _renamed(name, renames)
        paths |= {path: _rewrite(item, rename) for path, item in kept[name].items()}
    components = _components(services, documents, used, renames)
    _check_operation_ids(kept)
    document: Document = {
        "openapi": _agreed(services, documents, "openapi", lambda d: d.get("openapi")),
        "info": {
            "title": entrypoint.title,
            "version": _agreed(
                services, documents, "info version", lambda d: d.get("info", {}).get("version")
            ),
            "description": f"The {entrypoint.name} entrypoint of the gateway: "
            f"{', '.join(services)}.",
        },
        "paths": dict(sorted(paths.items())),
        "components": components,
    }
    tags = _tags(services, documents, paths)
    if tags:
        document["tags"] = tags
    return document


def _renamed(
    service: str, renames: Mapping[tuple[str, str], set[str]]
) -> dict[tuple[str, str], str]:
    """``service``'s components that :func:`_clashes` renames, and their new names."""
    return {key: f"{service}.{key[1]}" for key, names in renames.items() if service in names}


def _components(
    services: list[str],
    documents: Mapping[str, Document],
    used: Mapping[str, set[tuple[str, str]]],
    renames: Mapping[tuple[str, str], set[str]],
) -> dict[str, Document]:
    """The used components of every service, renamed where they clash, in one table."""
    components: dict[str, Document] = {}
    for name in services:
        rename = _renamed(name, renames)
        sections = documents[name].get("components", {})
        for section, component in sorted(used[name]):
            target = rename.get((section, component), component)
            schema = _rewrite(sections[section][component], rename)
            merged = components.setdefault(section, {})
            if merged.setdefault(target, schema) != schema:
                raise MergeError(f"components/{section}/{target} is defined twice")
        for scheme, definition in sections.get("securitySchemes", {}).items():
            merged = components.setdefault("securitySchemes", {})
            if merged.setdefault(scheme, definition) != definition:
                raise MergeError(
                    f"security scheme {scheme!r} differs between {name} and another service "
                    "of the entrypoint; operations name it, so it is not renamed"
                )
    return {section: dict(sorted(entries.items())) for section, entries in components.items()}


def _walk_refs(value: object) -> Iterator[str]:
    """Every ``$ref`` (and discriminator mapping) target inside ``value``."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "$ref" and isinstance(item, str):
                yield item
            elif key == "mapping" and isinstance(item, dict):
                yield from (v for v in item.values() if isinstance(v, str))
            else:
                yield from _walk_refs(item)
    elif isinstance(value, list):
        for item in value:
            yield from _walk_refs(item)


def _component_key(ref: str) -> tuple[str, str] | None:
    if not ref.startswith(_REF_PREFIX):
        return None
    section, _, name = ref[len(_REF_PREFIX) :].partition("/")
    return (section, name) if name else None


def _refs(value: object) -> set[tuple[str, str]]:
    """The components ``value`` refers to directly."""
    return {key for ref in _walk_refs(value) if (key := _component_key(ref))}


def _reachable(document: Document, paths: Document) -> set[tuple[str, str]]:
    """The components ``paths`` use, directly or through other components."""
    sections = document.get("components", {})
    seen: set[tuple[str, str]] = set()
    pending = list(_refs(paths))
    while pending:
        key = pending.pop()
        if key in seen:
            continue
        section, name = key
        if name not in sections.get(section, {}):
            raise MergeError(f"a reference to components/{section}/{name}, which is not defined")
        seen.add(key)
        pending += _refs(sections[section][name])
    return seen


def _clashes(
    services: list[str], documents: Mapping[str, Document], used: Mapping[str, set[tuple[str, str]]]
) -> dict[tuple[str, str], set[str]]:
    """Component → the services whose variant of it must be renamed."""
    holders: dict[tuple[str, str], list[str]] = {}
    for name in services:
        for key in sorted(used[name]):
            holders.setdefault(key, []).append(name)

    def schema(name: str, key: tuple[str, str]) -> object:
        return documents[name]["components"][key[0]][key[1]]

    shared = {key: names for key, names in holders.items() if len(names) > 1}
    clashing = {
        key
        for key, names in shared.items()
        if len({json.dumps(schema(n, key), sort_keys=True) for n in names}) > 1
    }
    # A name whose schemas agree but point at a clashing name means different things too.
    changed = True
    while changed:
        changed = False
        for key, names in shared.items():
            if key in clashing:
                continue
            if any(_refs(schema(n, key)) & clashing for n in names):
                clashing.add(key)
                changed = True
    return {key: set(shared[key]) for key in clashing}


def _rewrite(value: Any, rename: Mapping[tuple[str, str], str]) -> Any:
    """``value`` with its references to renamed components pointing at the new names."""
    if not rename:
        return value
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if key == "$ref" and isinstance(item, str):
                out[key] = _renamed_ref(item, rename)
            elif key == "mapping" and isinstance(item, dict):
                out[key] = {k: _renamed_ref(v, rename) for k, v in item.items()}
            else:
                out[key] = _rewrite(item, rename)
        return out
    if isinstance(value, list):
        return [_rewrite(item, rename) for item in value]
    return value


def _renamed_ref(ref: Any, rename: Mapping[tuple[str, str], str]) -> Any:
    key = _component_key(ref) if isinstance(ref, str) else None
    if key is None or key not in rename:
        return ref
    return f"{_REF_PREFIX}{key[0]}/{rename[key]}"


def _check_operation_ids(kept: Mapping[str, Document]) -> None:
    owners: dict[str, str] = {}
    for name, paths in kept.items():
        for path, item in paths.items():
            for method, operation in item.items():
                if not isinstance(operation, dict) or "operationId" not in operation:
                    continue
                where = f"{name}'s {method.upper()} {path}"
                first = owners.setdefault(operation["operationId"], where)
                if first != where:
                    raise MergeError(
                        f"operationId {operation['operationId']!r} is both {first} and {where}"
                    )


def _agreed(
    services: list[str],
    documents: Mapping[str, Document],
    what: str,
    get: Callable[[Document], object],
) -> str:
    values = {name: get(documents[name]) for name in services}
    if len(set(values.values())) != 1 or None in values.values():
        raise MergeError(f"the services disagree on the {what}: {values}")
    return str(next(iter(values.values())))


def _tags(
    services: list[str], documents: Mapping[str, Document], paths: Document
) -> list[Document]:
    """The documents' declared tags (one definition per name) and every tag an operation
    uses, sorted by name."""
    declared: dict[str, Document] = {}
    for name in services:
        for tag in documents[name].get("tags", []):
            if declared.setdefault(tag["name"], tag) != tag:
                raise MergeError(f"tag {tag['name']!r} is declared differently by {name}")
    used = {
        tag
        for item in paths.values()
        for operation in item.values()
        if isinstance(operation, dict)
        for tag in operation.get("tags", [])
    }
    return [declared.get(tag, {"name": tag}) for tag in sorted(used | set(declared))]
