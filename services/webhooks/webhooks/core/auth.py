"""Who may manage webhooks: a user's token (the intake needs none: the signature is the
credential). A workload token, a pipeline's credential bound to one run, schedule or
deployment, may not configure webhooks (security reference §1.3, class separation).

Any user of a project may create webhooks and triggers in it, and see them; changing or
deleting one (a webhook's secret, its active flag, a trigger's snapshot) is for the user
who created it or an admin (:func:`require_owner`). ZenML's open-source server lets every
user change every webhook; here a webhook's secret signs deliveries that run its owner's
pipelines, so another user must not be able to rotate and read it."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from starlette.requests import HTTPConnection

from shared.auth import TokenKind, require_principal
from shared.errors import AuthorizationFailed, Forbidden

MANAGING_KINDS = (TokenKind.ACCESS, TokenKind.DEVICE, TokenKind.GENERIC)


@dataclass(frozen=True)
class Actor:
    """The user a management request acts for."""

    user_id: uuid.UUID
    is_admin: bool


def acting_user(connection: HTTPConnection) -> Actor:
    """The calling user (401 without a valid user token)."""
    principal = require_principal(connection, kinds=MANAGING_KINDS)
    if principal.user_id is None:
        raise AuthorizationFailed("This token does not belong to a user.")
    return Actor(principal.user_id, principal.is_admin)


def require_owner(actor: Actor, owner_id: uuid.UUID | None, thing: str, action: str) -> None:
    """403 unless ``actor`` is the ``thing``'s creator (``owner_id``; with none recorded,
    admins only) or an admin."""
    if actor.is_admin or (owner_id is not None and owner_id == actor.user_id):
        return
    raise Forbidden(f"Only the {thing}'s creator or an admin may {action}.")
