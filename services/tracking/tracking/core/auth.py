"""Who is calling: every tracking route needs a user's token."""

from __future__ import annotations

import uuid

from starlette.requests import HTTPConnection

from shared.auth import Principal, TokenKind, require_principal
from shared.errors import AuthorizationFailed

USER_TOKEN_KINDS = (TokenKind.ACCESS, TokenKind.DEVICE, TokenKind.GENERIC, TokenKind.WORKLOAD)


def caller(connection: HTTPConnection) -> Principal:
    """The authenticated user (401 without a valid user token)."""
    return require_principal(connection, kinds=USER_TOKEN_KINDS)


def caller_id(connection: HTTPConnection) -> uuid.UUID:
    principal = caller(connection)
    if principal.user_id is None:
        raise AuthorizationFailed("This token does not belong to a user.")
    return principal.user_id
