"""Who is calling, as every identity domain asks it: the tokens that act for a user, and
the active user behind a request's verified token.

A user's token of :data:`MANAGING_KINDS` may manage accounts, devices and the user
itself; a workload token (a pipeline's credential, bound to one run, schedule or
deployment) may only read the current user and ask for API tokens, and is refused
elsewhere with 401 ``AuthorizationException`` (security reference §1.3, class
separation). What each kind of user may then do is its domain's rule, in its service.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlmodel.ext.asyncio.session import AsyncSession

from identity.models import User
from identity.user.repository import UserRepository
from shared.auth import Principal, TokenKind, require_kind
from shared.errors import Unauthorized

MANAGING_KINDS = (TokenKind.ACCESS, TokenKind.DEVICE, TokenKind.GENERIC)
"""A user's tokens that may manage accounts, devices and the user itself."""
USER_TOKEN_KINDS = (*MANAGING_KINDS, TokenKind.WORKLOAD)
"""A user's tokens: what may read the current user and ask for API tokens."""


async def acting_user(
    session: AsyncSession, caller: Principal, *, kinds: Sequence[str] = MANAGING_KINDS
) -> User:
    """The active user behind ``caller`` (401 when there is none, or when the token is
    not of ``kinds``)."""
    require_kind(caller, kinds)
    user = await UserRepository(session).get(caller.user_id) if caller.user_id else None
    if user is None or not user.active:
        raise Unauthorized(
            f"Authentication error: user {caller.token.subject} is not active",
            headers={"WWW-Authenticate": 'Bearer error="invalid_token"'},
        )
    return user
