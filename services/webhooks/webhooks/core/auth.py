"""Who may manage webhooks: a user's token (the intake needs none: the signature is the
credential). A workload token, a pipeline's credential bound to one run, schedule or
deployment, may not configure webhooks (security reference §1.3, class separation)."""

from __future__ import annotations

import uuid

from starlette.requests import HTTPConnection

from shared.auth import TokenKind, require_principal
from shared.errors import AuthorizationFailed

MANAGING_KINDS = (TokenKind.ACCESS, TokenKind.DEVICE, TokenKind.GENERIC)


def acting_user(connection: HTTPConnection) -> uuid.UUID:
    """The calling user's id (401 without a valid user token)."""
    user_id = require_principal(connection, kinds=MANAGING_KINDS).user_id
    if user_id is None:
        raise AuthorizationFailed("This token does not belong to a user.")
    return user_id
