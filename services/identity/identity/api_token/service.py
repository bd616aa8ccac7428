"""API tokens (``GET /api/v1/api_token``).

Generic tokens are short-lived user tokens: ``expires_in`` up to the server's maximum.
They keep the caller's ``device_id``, so they die with the caller's device.

Workload tokens (scoped to one pipeline run, schedule or deployment) are not issued:
tracking does not keep those objects yet, so no scope could be checked. Asking for one
is answered with 501 ``NotImplementedError``, the reference's code for "this server
cannot do that".
"""

from __future__ import annotations

from datetime import timedelta

from identity.api_token.schemas import APITokenQuery, APITokenType
from identity.auth.service import TokenService
from identity.models import User
from shared.auth import TokenKind, VerifiedToken
from shared.errors import BadRequest, PlatformError


class WorkloadTokensUnavailable(PlatformError):
    status_code = 501
    wire_name = "NotImplementedError"

    def __init__(self) -> None:
        super().__init__(
            "Workload API tokens are not available on this server yet: it does not track "
            "pipeline runs, schedules or deployments. Use a generic API token."
        )


class APITokenService:
    def __init__(self, tokens: TokenService) -> None:
        self.tokens = tokens

    async def issue(self, user: User, caller: VerifiedToken, query: APITokenQuery) -> str:
        if query.token_type is APITokenType.WORKLOAD:
            raise WorkloadTokensUnavailable()
        if query.schedule_id or query.pipeline_run_id or query.deployment_id:
            raise BadRequest(
                "Generic API tokens cannot be scoped to a schedule, pipeline run or deployment."
            )
        settings = self.tokens.settings
        maximum = int(settings.generic_api_token_max_lifetime.total_seconds())
        # Compared as numbers first: a huge expires_in does not fit in a timedelta.
        if query.expires_in is not None and query.expires_in > maximum:
            raise BadRequest(
                "The maximum expiration time for generic API tokens allowed by this server "
                f"is {maximum} seconds."
            )
        lifetime = (
            settings.generic_api_token_lifetime
            if query.expires_in is None
            else timedelta(seconds=query.expires_in)
        )
        device_id = caller.device_id
        return await self.tokens.issue_for_user(
            user,
            TokenKind.GENERIC,
            lifetime,
            device_id=device_id,
        )
