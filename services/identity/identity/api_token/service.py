"""API tokens (``GET /api/v1/api_token``).

Generic tokens are short-lived user tokens: ``expires_in`` up to the server's maximum.
They keep the caller's ``device_id`` and API key claims (``api_key_id``, ``key_gen``), so
they die with the caller's device or API key.

Workload tokens are bound to exactly one schedule, pipeline run or deployment, named in
the query or, without one, inherited from the calling workload token. Tracking is asked,
fresh rather than from the cache, that the object exists and is active (a schedule
active, a run in progress). They carry no ``exp`` (unless ``expires_in`` asks for one, up
to the generic maximum; the reference ignores it), keep the caller's ``device_id`` and API
key claims, and are checked against their object on every use, on every service
(:mod:`shared.auth.workload`).

Where we differ from the reference, on purpose:

- A workload token may not obtain a generic token. The reference lets it, and the generic
  token drops the scope: it outlives the run, on every route, for up to the maximum
  lifetime. Refused with 401 ``AuthorizationException``.
- Naming more than one object is a 400: a token is bound to exactly one (the reference
  would bind a token to a schedule and a run at once).
- A workload token may obtain another only for its own object (schedule, then pipeline
  run, then deployment are compared, as the reference does), or for a run whose root run
  is its run. Tracking's runs have no parent runs (each is its own root), so in practice
  a run token re-scopes to the same run only.
"""

from __future__ import annotations

from datetime import timedelta

from identity.api_token.schemas import APITokenQuery, APITokenType
from identity.auth.service import TokenService, api_key_claims
from identity.core.auth import USER_TOKEN_KINDS, acting_user
from identity.models import User
from identity.user.service import UserService
from shared.auth import (
    Principal,
    ScopeKind,
    ScopeState,
    TokenKind,
    VerifiedToken,
    WorkloadScope,
    WorkloadScopes,
    scope_of,
    scopes_named,
)
from shared.errors import AuthorizationFailed, BadRequest


class ScopeRefused(AuthorizationFailed):
    def __init__(self, target: WorkloadScope, held: WorkloadScope) -> None:
        super().__init__(
            f"Unable to scope API token to {target}. The token used to authorize this "
            f"request is already scoped to {held}."
        )


class ScopeUnavailable(BadRequest):
    """The object does not exist, or takes no new tokens (400, the reference's ValueError)."""

    def __init__(self, scope: WorkloadScope, state: ScopeState | None) -> None:
        label = scope.kind.label
        if state is None:
            message = (
                f"{label.capitalize()} {scope.id} does not exist and API tokens cannot be "
                f"generated for non-existent {label}s for security reasons."
            )
        elif scope.kind is ScopeKind.PIPELINE_RUN:
            message = (
                f"The execution of pipeline run {scope.id} has already concluded and API "
                "tokens can no longer be generated for it for security reasons."
            )
        else:
            message = (
                f"{label.capitalize()} {scope.id} is not active and API tokens cannot be "
                f"generated for inactive {label}s for security reasons."
            )
        super().__init__(message)


class APITokenService:
    def __init__(self, tokens: TokenService, scopes: WorkloadScopes, users: UserService) -> None:
        self.tokens = tokens
        self.scopes = scopes
        self.users = users

    async def issue(self, principal: Principal, query: APITokenQuery) -> str:
        """A token for the active user behind any of a user's tokens (``principal``)."""
        user = await acting_user(self.users.repository.session, principal, kinds=USER_TOKEN_KINDS)
        caller = principal.token
        if query.token_type is APITokenType.WORKLOAD:
            return await self._workload(user, caller, query)
        if caller.kind == TokenKind.WORKLOAD:
            raise AuthorizationFailed(
                "A workload API token cannot obtain a generic API token: it would outlive "
                "the schedule, pipeline run or deployment it is scoped to."
            )
        if query.schedule_id or query.pipeline_run_id or query.deployment_id:
            raise BadRequest(
                "Generic API tokens cannot be scoped to a schedule, pipeline run or deployment."
            )
        lifetime = self._lifetime(query) or self.tokens.settings.generic_api_token_lifetime
        return await self.tokens.issue_for_user(
            user,
            TokenKind.GENERIC,
            lifetime,
            device_id=caller.device_id,
            api_key=api_key_claims(caller),
        )

    def _lifetime(self, query: APITokenQuery) -> timedelta | None:
        """``expires_in`` as a lifetime (``None`` when not given or 0), at most the server's
        maximum for generic tokens, which also bounds a workload token that asks for one."""
        if not query.expires_in:
            return None
        maximum = int(self.tokens.settings.generic_api_token_max_lifetime.total_seconds())
        # Compared as numbers first: a huge expires_in does not fit in a timedelta.
        if query.expires_in > maximum:
            raise BadRequest(
                f"The maximum expiration time for {query.token_type.value} API tokens allowed "
                f"by this server is {maximum} seconds."
            )
        return timedelta(seconds=query.expires_in)

    async def _workload(self, user: User, caller: VerifiedToken, query: APITokenQuery) -> str:
        lifetime = self._lifetime(query)
        requested = scopes_named(query.model_dump())
        if len(requested) > 1:
            raise BadRequest(
                "Workload API tokens must be scoped to exactly one schedule, pipeline run or "
                "deployment."
            )
        held = scope_of(caller) if caller.kind == TokenKind.WORKLOAD else None
        target = requested[0] if requested else held
        if target is None:
            raise BadRequest(
                "Workload API tokens must be scoped to a schedule, pipeline run or deployment."
            )
        state = await self._state_if_allowed(held, target)
        if state is None or not state.active:
            raise ScopeUnavailable(target, state)
        return await self.tokens.issue_for_user(
            user,
            TokenKind.WORKLOAD,
            lifetime,
            device_id=caller.device_id,
            scope=target,
            api_key=api_key_claims(caller),
        )

    async def _state_if_allowed(
        self, held: WorkloadScope | None, target: WorkloadScope
    ) -> ScopeState | None:
        """``target``'s state, once a caller bound to ``held`` may scope a token to it:
        its own object, or a run whose root run is the caller's run."""
        if held is None or held == target:
            return await self.scopes.state(target, fresh=True)
        if held.kind is not ScopeKind.PIPELINE_RUN or target.kind is not ScopeKind.PIPELINE_RUN:
            raise ScopeRefused(target, held)
        state = await self.scopes.state(target, fresh=True)
        if state is not None and state.root_run_id != held.id:
            raise ScopeRefused(target, held)
        return state
