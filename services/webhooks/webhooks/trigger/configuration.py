"""A trigger's ``configuration``: ``{"target_events": [<target>, …]}``, each target a
provider's curated event with field filters, or a dynamic path target. Validated strictly
when a trigger is saved; matched against events by the worker."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from shared.errors import RequestValidationFailed
from webhooks.core.filters import DynamicTarget, matches
from webhooks.intake.providers import Provider, SemanticEvent

logger = logging.getLogger(__name__)

MAX_TARGETS = 10
DYNAMIC = "dynamic"


def _invalid(location: list[str | int], message: str) -> RequestValidationFailed:
    return RequestValidationFailed.single(["body", "configuration", *location], message)


def _target(provider: Provider, index: int, raw: Any) -> BaseModel:
    location: list[str | int] = ["target_events", index]
    if not isinstance(raw, dict) or not isinstance(raw.get("type"), str):
        raise _invalid(location, "a target is an object with a 'type'")
    kind = raw["type"]
    model = DynamicTarget if kind == DYNAMIC else provider.targets.get(kind)
    if model is None:
        known = ", ".join([*provider.targets, DYNAMIC])
        raise _invalid(
            [*location, "type"], f"unknown {provider.name} event {kind!r}; one of {known}"
        )
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise RequestValidationFailed.from_pydantic(
            exc, ["body", "configuration", *location, kind]
        ) from None


def targets_of(provider: Provider, configuration: Mapping[str, Any]) -> list[BaseModel]:
    """The validated targets (422 on anything malformed or unknown)."""
    extra = set(configuration) - {"target_events"}
    if extra:
        raise _invalid([sorted(extra)[0]], "unknown configuration key")
    raw = configuration.get("target_events") or []
    if not isinstance(raw, list):
        raise _invalid(["target_events"], "a list of targets")
    if not provider.min_targets <= len(raw) <= MAX_TARGETS:
        raise _invalid(
            ["target_events"],
            f"{provider.name} triggers take {provider.min_targets}-{MAX_TARGETS} targets",
        )
    return [_target(provider, i, item) for i, item in enumerate(raw)]


def normalize(provider: Provider, configuration: Mapping[str, Any]) -> dict[str, Any]:
    """The configuration as stored: every target with all its fields (omitted → null)."""
    return {"target_events": [t.model_dump() for t in targets_of(provider, configuration)]}


def _semantic_match(provider: Provider, target: BaseModel, event: SemanticEvent) -> bool:
    if getattr(target, "type", None) != event.type:
        return False
    for name, condition in target:
        if name == "type" or isinstance(condition, bool):
            continue  # flags are the provider's own rules (extra_match)
        if not matches(condition, event.fields.get(name)):
            return False
    extra = getattr(provider, "extra_match", None)
    return extra is None or bool(extra(target, event))


def match(
    provider: Provider,
    configuration: Mapping[str, Any],
    event_type: str,
    payload: Mapping[str, Any],
) -> dict[str, Any] | None:
    """The event a trigger matched (its curated form when there is one), or ``None``. A
    stored configuration that no longer validates is logged and matches nothing."""
    try:
        targets = targets_of(provider, configuration)
    except RequestValidationFailed as exc:
        logger.warning("skipping a trigger with a bad configuration", extra={"error": str(exc)})
        return None
    if not targets:  # custom triggers without targets take every event
        return {"type": event_type}
    semantic = provider.semantic_events(event_type, payload)
    for target in targets:
        if isinstance(target, DynamicTarget):
            if target.matches(event_type, payload):
                return {"type": event_type}
            continue
        for event in semantic:
            if _semantic_match(provider, target, event):
                return {"type": event.type, **dict(event.fields), **dict(event.data)}
    return None
