"""Who is calling: every tracking route needs a user's token.

A workload token (a pipeline's credential, bound to one pipeline run, schedule or
deployment) works on the routes a running pipeline needs, with two limits a demanding
user expects and the reference lacks (there a deployment's token works everywhere):

- by id, it may address only its own run, schedule or deployment; a schedule's or a
  deployment's token may also address any run, since they start runs (tracking does not
  record which);
- it may not create schedules or deployments (:data:`MANAGING_KINDS`).
"""

from __future__ import annotations

import uuid
from collections.abc import Collection

from starlette.requests import HTTPConnection, Request

from shared.auth import Principal, ScopeKind, TokenKind, WorkloadScope, require_principal, scope_of
from shared.errors import AuthorizationFailed
from shared.routing import path_param

MANAGING_KINDS = (TokenKind.ACCESS, TokenKind.DEVICE, TokenKind.GENERIC)
USER_TOKEN_KINDS = (*MANAGING_KINDS, TokenKind.WORKLOAD)


def caller(connection: HTTPConnection, *, kinds: Collection[str] = USER_TOKEN_KINDS) -> Principal:
    """The authenticated user (401 without a valid user token of ``kinds``)."""
    return require_principal(connection, kinds=kinds)


def caller_id(
    connection: HTTPConnection, *, kinds: Collection[str] = USER_TOKEN_KINDS
) -> uuid.UUID:
    principal = caller(connection, kinds=kinds)
    if principal.user_id is None:
        raise AuthorizationFailed("This token does not belong to a user.")
    return principal.user_id


def object_caller(connection: HTTPConnection, kind: ScopeKind, object_id: uuid.UUID) -> Principal:
    """The caller, when it may address this run, schedule or deployment (see above)."""
    principal = caller(connection)
    if principal.kind != TokenKind.WORKLOAD:
        return principal
    # The authentication backend accepts only workload tokens bound to exactly one object.
    held = scope_of(principal.token)
    target = WorkloadScope(kind, object_id)
    if held == target or (
        kind is ScopeKind.PIPELINE_RUN
        and held is not None
        and held.kind is not ScopeKind.PIPELINE_RUN
    ):
        return principal
    raise AuthorizationFailed(f"A workload token scoped to {held} may not be used on {target}.")


SNAPSHOT_RUN_KINDS = (*MANAGING_KINDS, TokenKind.SERVICE)


def snapshot_runner(connection: HTTPConnection, clients: Collection[str]) -> uuid.UUID | None:
    """Who may run a snapshot, and as which user: a user (login, device or generic API
    token) as itself, or a service named in ``clients`` (the ``snapshot_run_clients``
    setting: the webhooks service, for its triggers) as nobody (the run records the
    trigger instead). A workload token may not: it is bound to its own run, schedule or
    deployment."""
    principal = caller(connection, kinds=SNAPSHOT_RUN_KINDS)
    if principal.kind != TokenKind.SERVICE:
        return caller_id(connection, kinds=SNAPSHOT_RUN_KINDS)
    if principal.identity not in {f"service:{c}" for c in clients}:
        raise AuthorizationFailed(f"The service '{principal.display_name}' may not run snapshots.")
    return None


def object_id(request: Request, name: str, kind: ScopeKind) -> uuid.UUID:
    """The path parameter ``name``, the id of a run, schedule or deployment (``kind``), once
    the caller (a user's token) may address that object (see above)."""
    caller_id(request)
    found = path_param(request, name, uuid.UUID)
    object_caller(request, kind, found)
    return found
