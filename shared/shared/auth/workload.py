"""Workload tokens: the one object each is bound to, and the check made on every use.

A workload token (kind ``workload``) has no ``exp``. It carries exactly one of the claims
``schedule_id``, ``pipeline_run_id`` or ``deployment_id`` and is accepted only while
tracking, which owns those objects, says the object still accepts it:

- a schedule: it exists and is active;
- a pipeline run: it exists and is in progress, or finished less than tracking's
  ``workload_token_expiration_leeway`` ago;
- a deployment: it exists.

The rule lives in tracking alone (it answers with a :class:`ScopeState`); every service
asks through a :class:`ScopeSource` (tracking reads its own database, the others call
tracking's ``GET /internal/v1/workload_scopes/{kind}/{id}`` with their service token, see
:class:`TrackingScopeSource`) and keeps each answer ``ttl`` seconds in
:class:`WorkloadScopes`, which :class:`~shared.auth.JWTAuthBackend` consults for every
request that presents a workload token. A service without one refuses workload tokens.
When tracking cannot answer, the request fails with 503 (never taken for "accepted").
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol
from uuid import UUID

import httpx
from pydantic import BaseModel, ValidationError

from shared.auth.cache import LoadCache
from shared.auth.tokens import VerifiedToken
from shared.errors import NO_SUCH_ENDPOINT, ServiceUnavailable

__all__ = [
    "SCOPE_PATH",
    "ScopeKind",
    "ScopeSource",
    "ScopeState",
    "TrackingScopeSource",
    "WorkloadScope",
    "WorkloadScopes",
    "scope_of",
    "scopes_named",
]

SCOPE_PATH = "/internal/v1/workload_scopes"
"""Tracking's internal route: ``{SCOPE_PATH}/{kind}/{id}`` answers a :class:`ScopeState`."""


class ScopeKind(StrEnum):
    """What a workload token can be bound to, in the order the reference checks them."""

    SCHEDULE = "schedule"
    PIPELINE_RUN = "pipeline_run"
    DEPLOYMENT = "deployment"

    @property
    def claim(self) -> str:
        """The token claim (and ``/api_token`` query parameter) naming the object."""
        return f"{self.value}_id"

    @property
    def label(self) -> str:
        return self.value.replace("_", " ")


@dataclass(frozen=True)
class WorkloadScope:
    kind: ScopeKind
    id: UUID

    def __str__(self) -> str:
        return f"{self.kind.label} {self.id}"

    def claims(self) -> dict[str, str]:
        return {self.kind.claim: str(self.id)}


def scopes_named(values: Mapping[str, Any]) -> list[WorkloadScope]:
    """The scopes ``values`` (token claims, query parameters) name, in :class:`ScopeKind`
    order. A value that is not a UUID is skipped: it names nothing."""
    found = []
    for kind in ScopeKind:
        value = values.get(kind.claim)
        if isinstance(value, UUID):
            found.append(WorkloadScope(kind, value))
        elif isinstance(value, str):
            try:
                found.append(WorkloadScope(kind, UUID(value)))
            except ValueError:
                continue
    return found


def scope_of(token: VerifiedToken) -> WorkloadScope | None:
    """The object a workload token is bound to; ``None`` unless it names exactly one."""
    named = scopes_named(token.claims)
    return named[0] if len(named) == 1 else None


class ScopeState(BaseModel):
    """What tracking knows of a workload token's object (which exists)."""

    kind: ScopeKind
    id: UUID
    active: bool
    """New workload tokens may be issued: the schedule is active, the run in progress."""
    usable: bool
    """Tokens already issued are accepted (a finished run's, within the leeway)."""
    root_run_id: UUID | None = None
    """A run's root run (the run itself when it has no parent)."""


def refusal_reason(scope: WorkloadScope, state: ScopeState | None) -> str | None:
    """Why a token bound to ``scope`` is refused, or ``None`` when it is accepted."""
    if state is None:
        return f"{scope} does not exist"
    if state.usable:
        return None
    if scope.kind is ScopeKind.PIPELINE_RUN:
        return f"{scope} has finished and API tokens scoped to it are no longer valid"
    return f"{scope} is not active"


class ScopeSource(Protocol):
    async def state(self, scope: WorkloadScope) -> ScopeState | None:
        """The object's state; ``None`` when it does not exist. Raises
        :class:`~shared.errors.ServiceUnavailable` when that cannot be told."""
        ...


class TrackingScopeSource:
    """Asks tracking over HTTP, authenticated as this service."""

    def __init__(self, http: httpx.AsyncClient, tracking_url: str, auth: httpx.Auth) -> None:
        self._http = http
        self._url = tracking_url.rstrip("/") + SCOPE_PATH
        self._auth = auth

    async def state(self, scope: WorkloadScope) -> ScopeState | None:
        unavailable = f"The {scope.kind.label} of this workload token cannot be checked right now."
        try:
            response = await self._http.get(
                f"{self._url}/{scope.kind.value}/{scope.id}", auth=self._auth
            )
        except httpx.HTTPError as exc:
            raise ServiceUnavailable(unavailable) from exc
        # Tracking's own "no such object" is the platform's error list; a 404 for the path
        # itself (a gateway or service without the route) is a misconfiguration, not an
        # answer.
        if response.status_code == 404 and _is_platform_error(response):
            return None
        if response.status_code != 200:
            raise ServiceUnavailable(unavailable)
        try:
            return ScopeState.model_validate_json(response.content)
        except ValidationError as exc:
            raise ServiceUnavailable(unavailable) from exc


def _is_platform_error(response: httpx.Response) -> bool:
    try:
        body = response.json()
    except ValueError:
        return False
    detail = body.get("detail") if isinstance(body, dict) else None
    return isinstance(detail, list) and detail[1:] != [NO_SUCH_ENDPOINT]


class WorkloadScopes:
    """The on-use check of workload tokens, with each object's state cached ``ttl``
    seconds (missing objects too), at most ``max_entries`` of them. Requests that find no
    fresh entry for the same object at the same time share one lookup. ``clock``
    (monotonic seconds) is injectable for tests."""

    def __init__(
        self,
        source: ScopeSource,
        *,
        ttl: float,
        max_entries: int = 10000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.source = source
        self.ttl = ttl
        self._cache: LoadCache[WorkloadScope, ScopeState | None] = LoadCache(
            max_entries=max_entries, clock=clock
        )

    async def state(self, scope: WorkloadScope, *, fresh: bool = False) -> ScopeState | None:
        """The object's state, from the cache unless ``fresh`` (issuing a token asks fresh:
        it must not be issued for an object deactivated a moment ago)."""
        if not fresh:
            kept = self._cache.kept(scope)
            if kept is not None:
                return kept.value
        return await self._cache.load(scope, lambda: self._lookup(scope), join=not fresh)

    async def _lookup(self, scope: WorkloadScope) -> tuple[ScopeState | None, float]:
        return await self.source.state(scope), self.ttl

    async def refusal(self, token: VerifiedToken) -> str | None:
        """Why the workload ``token`` is refused now, or ``None`` when it is accepted."""
        scope = scope_of(token)
        if scope is None:
            return "workload token is not bound to exactly one schedule, pipeline run or deployment"
        return refusal_reason(scope, await self.state(scope))
