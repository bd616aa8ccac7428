"""A service's request state as one typed object.

Starlette hands every request the lifespan's state as ``request.state``, an untyped bag:
a misspelt key is an ``AttributeError`` at request time and every read is ``Any``. Instead
each service declares what its handlers read as a frozen dataclass over
:class:`ServiceState` (``identity.state.IdentityState``, ...), whose fields are keys of the
lifespan's state. :func:`shared.app.create_service_app` builds it once, when the lifespan
starts (a field the lifespan does not provide fails the start, not a request), and every
request carries it; handlers read it with ``IdentityState.of(request)``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self

from starlette.requests import HTTPConnection
from starlette.types import Scope

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from shared.auth.revocation import RevocationList
    from shared.db import SessionMaker
    from shared.redis import Keys

__all__ = ["STATE_KEY", "ServiceState", "StoreState"]

STATE_KEY = "service_state"
"""Where the typed state sits in the lifespan's state (and so in each request's)."""


class ServiceState:
    """The base of a service's typed state: subclasses are frozen dataclasses whose field
    names are keys of the lifespan's state."""

    @classmethod
    def from_lifespan(cls, state: Mapping[str, Any]) -> Self:
        """The service's state from the lifespan's (``KeyError``-free: a missing key is a
        ``LookupError`` naming it)."""
        names = [field.name for field in dataclasses.fields(cls)]  # type: ignore[arg-type]
        missing = [name for name in names if name not in state]
        if missing:
            raise LookupError(f"{cls.__name__}: the lifespan provides no {', '.join(missing)}")
        return cls(**{name: state[name] for name in names})

    @classmethod
    def of(cls, connection: HTTPConnection) -> Self:
        """The state of the service ``connection`` (a request) is served by."""
        return cls.of_scope(connection.scope)

    @classmethod
    def of_scope(cls, scope: Scope) -> Self:
        """:meth:`of`, from an ASGI scope (a path served ahead of Starlette's request)."""
        state = scope["state"][STATE_KEY]
        if not isinstance(state, cls):
            raise TypeError(f"the service's state is a {type(state).__name__}, not {cls.__name__}")
        return state


@dataclasses.dataclass(frozen=True, slots=True)
class StoreState(ServiceState):
    """The stores every service's lifespan opens (:func:`shared.app.create_service_app`),
    for a service whose handlers reach them themselves: a base of its state."""

    sessionmaker: SessionMaker
    redis: Redis
    keys: Keys
    revocations: RevocationList
