"""Building the strict filter models of a provider's curated targets."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, create_model

from webhooks.core.filters import FilterValue


def target_model(
    event_type: str, fields: Iterable[str], flags: Iterable[str] = ()
) -> type[BaseModel]:
    """``{type: <event_type>, <field>: <filter>…, <flag>: bool…}``; unknown keys rejected."""
    definitions: dict[str, Any] = {"type": (Literal[event_type], ...)}
    definitions.update({name: (FilterValue, None) for name in fields})
    definitions.update({name: (bool | None, None) for name in flags})
    model: type[BaseModel] = create_model(
        f"{event_type.title().replace('_', '')}Target",
        __config__=ConfigDict(extra="forbid"),
        **definitions,
    )
    return model
