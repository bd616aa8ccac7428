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

import datetime as dt
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined
from sqlalchemy import Row

from shared.types import naive_utc

_MISSING = object()


def _is_datetime(annotation: Any) -> bool:
    return annotation is dt.datetime or annotation == (dt.datetime | None)


def _wire_datetime(value: Any) -> Any:
    return naive_utc(value) if isinstance(value, dt.datetime) else value


class Shape:
    """The fields of ``model`` (its own, not its nested models'), read from a row."""

    def __init__(self, model: type[BaseModel]) -> None:
        self.model = model
        self._fields: list[tuple[str, Any, Callable[[Any], Any] | None]] = []
        self._plans: dict[tuple[str, ...], tuple[int | None, ...]] = {}
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
        if isinstance(row, Row):
            return self._of_row(row, values)
        out: dict[str, Any] = {}
        for name, default, convert in self._fields:
            value = values[name] if name in values else getattr(row, name, default)
            if value is _MISSING:
                value = self._default(name)
            out[name] = convert(value) if convert is not None else value
        return out

    def _of_row(self, row: Row[Any], values: dict[str, Any]) -> dict[str, Any]:
        # A Core row answers a name it lacks through a slow exception path, and reading
        # it as a dict costs more than the rest: read its columns by position instead.
        columns = row._fields
        plan = self._plans.get(columns)
        if plan is None:
            plan = self._plans[columns] = self._plan(columns)
        out: dict[str, Any] = {}
        for (name, default, convert), index in zip(self._fields, plan, strict=True):
            if name in values:
                value = values[name]
            elif index is not None:
                value = row[index]
            elif default is _MISSING:
                value = self._default(name)
            else:
                value = default
            out[name] = convert(value) if convert is not None else value
        return out

    def _plan(self, columns: tuple[str, ...]) -> tuple[int | None, ...]:
        """Each field's position among ``columns`` (``None``: not a column)."""
        where = {name: i for i, name in enumerate(columns)}
        return tuple(where.get(name) for name, _, _ in self._fields)

    def of_mapping(self, values: Mapping[str, Any]) -> dict[str, Any]:
        return self.of(None, **values)

    def _default(self, name: str) -> Any:
        info = self.model.model_fields[name]
        if info.default_factory is not None:
            return info.default_factory()  # type: ignore[call-arg]
        raise KeyError(f"{self.model.__name__}.{name} has no value and no default")
