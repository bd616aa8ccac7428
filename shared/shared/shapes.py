"""Response bodies built straight from rows, in a response model's shape, unvalidated.

Building a pydantic model per item (and per nested part) and serializing it costs more than
the rest of a list request. For the hot read paths a :class:`Shape` reads a model's fields
from a row (any object with attributes of the same names: an ORM instance, a Core ``Row``)
into a plain dict in the model's key order, with the model's defaults for what the row
lacks and datetimes in the wire form of :data:`shared.types.WireDatetime`; the dicts are
serialized by pydantic's serializer like the models would be. The models stay the
declaration (OpenAPI, request parsing) and tests check that every dict a shape builds
validates as its model and serializes identically.
"""

from __future__ import annotations

import collections
import datetime as dt
import types
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic_core import PydanticUndefined
from sqlalchemy import Row

from shared.types import naive_utc

__all__ = ["Builders", "Shape", "compile_builder", "plain_rows"]

_MISSING = object()


def _is_datetime(annotation: Any) -> bool:
    """``datetime``, ``datetime | None``, or either with ``Annotated`` metadata (pydantic
    strips it from a field's own annotation, not from a union's members)."""
    if annotation is dt.datetime or annotation == (dt.datetime | None):
        return True
    if get_origin(annotation) in (Union, types.UnionType):
        members = [m for m in get_args(annotation) if m is not type(None)]
        return len(members) == 1 and _is_datetime(members[0])
    if get_origin(annotation) is Annotated:
        return _is_datetime(get_args(annotation)[0])
    return False


def _wire_datetime(value: Any) -> Any:
    return naive_utc(value) if isinstance(value, dt.datetime) else value


Builder = Callable[[Any, dict[str, Any]], dict[str, Any]]
_RECENT_RESULTS = 64


def compile_builder(arguments: str, display: str, env: dict[str, Any]) -> Any:
    """``def build(<arguments>): return <display>``, compiled in ``env`` (sources from
    :meth:`Shape.display`, built from models' field names)."""
    source = f"def build({arguments}):\n    return {display}\n"
    exec(source, env)  # noqa: S102 (see above)
    return env["build"]


_PLAIN: dict[tuple[str, ...], type[tuple[Any, ...]]] = {}
_PLAIN_KINDS = 256


def plain_rows(rows: Sequence[Row[Any]]) -> Sequence[Any]:
    """``rows`` (Core rows of one result) as named tuples, for code that reads their
    columns by name again and again: a Row reads a column by attribute only after
    checking that its class has no attribute of that name, a check that fails by raising
    and formatting an ``AttributeError`` (~2,000 instructions each), where a named
    tuple's field is a C-level descriptor. Rows whose column names are not all plain
    identifiers are returned as they are. Shapes read both by position."""
    if not rows:
        return rows
    fields = rows[0]._fields
    kind = _PLAIN.get(fields)
    if kind is None:
        if not all(name.isidentifier() and not name.startswith("_") for name in fields):
            return rows
        if len(_PLAIN) >= _PLAIN_KINDS:
            _PLAIN.clear()
        kind = _PLAIN[fields] = collections.namedtuple("PlainRow", fields)
    make = kind._make  # type: ignore[attr-defined]
    return [make(row) for row in rows]


class Builders:
    """Compiled builders, one per kind of source (a Core row's columns, or ``None`` for any
    other object) and ``given`` key, made by ``compile(columns, given)`` on first use.

    The rows of one result share their metadata: its builder is remembered by the
    metadata's id (the entry holds the metadata, so its id cannot be reused meanwhile),
    which skips hashing the columns for every row."""

    def __init__(self, compile: Callable[[tuple[str, ...] | None, Any], Any]) -> None:
        self._compile = compile
        self._built: dict[tuple[tuple[str, ...] | None, Any], Any] = {}
        self._recent: dict[tuple[int, Any], tuple[object, Any]] = {}

    def for_row(self, row: Any, given: Any) -> Any:
        """The builder for ``row`` and the explicit values ``given`` names."""
        if not isinstance(row, Row):
            if isinstance(row, tuple) and hasattr(row, "_fields"):  # see plain_rows
                return self._get(row._fields, given)
            return self._get(None, given)
        # A Core row answers a name it lacks through a slow exception path: its builder
        # reads its columns by position.
        parent = row._parent
        recent = self._recent.get((id(parent), given))
        if recent is not None and recent[0] is parent:
            return recent[1]
        builder = self._get(row._fields, given)
        if len(self._recent) >= _RECENT_RESULTS:
            self._recent.clear()
        self._recent[(id(parent), given)] = (parent, builder)
        return builder

    def _get(self, columns: tuple[str, ...] | None, given: Any) -> Any:
        builder = self._built.get((columns, given))
        if builder is None:
            builder = self._built[(columns, given)] = self._compile(columns, given)
        return builder


class Shape:
    """The fields of ``model`` (its own, not its nested models'), read from a row.

    For each kind of source (a Core row's columns, or any other object) and each set of
    explicit values, the reading is compiled once into a function with one dict display
    (positions and defaults resolved): several times faster than a loop over the fields.
    """

    def __init__(self, model: type[BaseModel]) -> None:
        self.model = model
        self._fields: list[tuple[str, Any, Callable[[Any], Any] | None]] = []
        self._builders = Builders(self._compile)
        for name, info in model.model_fields.items():
            if info.default_factory is not None:
                default: Any = _MISSING  # built per use, never shared between dicts
            elif info.default is PydanticUndefined:
                default = _MISSING
            else:
                default = info.default
            convert = _wire_datetime if _is_datetime(info.annotation) else None
            self._fields.append((name, default, convert))

    def of(self, row: Any, **values: Any) -> dict[str, Any]:
        """``values`` first, then ``row``'s attributes, then the model's defaults."""
        builder: Builder = self._builders.for_row(row, tuple(values))
        return builder(row, values)

    def of_mapping(self, values: Mapping[str, Any]) -> dict[str, Any]:
        return self.of(None, **values)

    def _compile(self, columns: tuple[str, ...] | None, given: tuple[str, ...]) -> Builder:
        """The builder for rows with ``columns`` (``None``: read attributes) and the
        explicit values named ``given``."""
        env: dict[str, Any] = {}
        display = self.display(columns, frozenset(given), env, "values", "s")
        builder: Builder = compile_builder("row, values", display, env)
        return builder

    def display(
        self,
        columns: tuple[str, ...] | None,
        given: frozenset[str],
        env: dict[str, Any],
        values: str,
        prefix: str,
        *,
        row: str = "row",
        inline: Mapping[str, str] | None = None,
    ) -> str:
        """Python source of a dict display building this shape from the row named ``row``
        (with ``columns``, or ``None``: read attributes), the mapping named ``values`` (the
        ``given`` keys) and the expressions ``inline`` gives for some fields; what it
        refers to goes into ``env`` under names starting with ``prefix``. Lets a caller
        build nested shapes in one function."""
        inline = inline or {}
        position = {name: i for i, name in enumerate(columns or ())}
        env[f"{prefix}_shape"] = self
        entries: list[str] = []
        for i, (name, default, convert) in enumerate(self._fields):
            env[f"{prefix}d{i}"] = default
            if name in inline:
                expression = inline[name]
            elif name in given:
                expression = f"{values}[{name!r}]"
            elif columns is None:
                read = f"getattr({row}, {name!r}, {prefix}d{i})"
                expression = f"{prefix}_shape._or_default({read}, {name!r})"
            elif name in position:
                expression = f"{row}[{position[name]}]"
            elif default is _MISSING:
                expression = f"{prefix}_shape._default({name!r})"
            else:
                expression = f"{prefix}d{i}"
            if convert is not None:
                env[f"{prefix}c{i}"] = convert
                expression = f"{prefix}c{i}({expression})"
            entries.append(f"{name!r}: {expression}")
        return "{" + ", ".join(entries) + "}"

    def _or_default(self, value: Any, name: str) -> Any:
        return self._default(name) if value is _MISSING else value

    def _default(self, name: str) -> Any:
        info = self.model.model_fields[name]
        if info.default_factory is not None:
            return info.default_factory()  # type: ignore[call-arg]
        raise KeyError(f"{self.model.__name__}.{name} has no value and no default")
