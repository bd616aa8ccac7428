"""The token endpoint's grants: password, API key and device code.

Failures answer kitaru's way: a wrong username or password is one uniform 401 (a dummy
hash is checked when the user does not exist, so timing does not tell either); grant
errors are 400 ``{"error": <code>, "detail": <message>}``.
"""

from __future__ import annotations

import math

from sqlmodel.ext.asyncio.session import AsyncSession

from agent_accounts.account.repository import AccountRepository
from agent_accounts.core.auth import AccountCaller, Clock, Issued, TokenIssuer
from agent_accounts.core.errors import TokenError
from agent_accounts.device.service import DeviceService
from agent_accounts.login.schemas import LoginForm, TokenResponse
from agent_accounts.settings import Settings
from shared.errors import Unauthorized
from shared.passwords import verify_password

PASSWORD = "password"
API_KEY = "api-key"
DEVICE_CODE = "urn:ietf:params:oauth:grant-type:device_code"


class InvalidLogin(Unauthorized):
    def __init__(self) -> None:
        super().__init__("Invalid username or password.")


def token_response(issued: Issued) -> TokenResponse:
    return TokenResponse(
        access_token=issued.token,
        expires_in=max(0, math.floor(issued.lifetime.total_seconds()) - 1),
    )


class LoginService:
    def __init__(
        self, session: AsyncSession, settings: Settings, issuer: TokenIssuer, clock: Clock
    ) -> None:
        self.accounts = AccountRepository(session)
        self.devices = DeviceService(session, settings, clock)
        self.settings = settings
        self.issuer = issuer

    def _local_grant(self, grant_type: str) -> None:
        if self.settings.server_auth_scheme != "local":
            raise TokenError(
                "unsupported_grant_type", f"This server does not accept the {grant_type} grant."
            )

    async def password(self, form: LoginForm) -> Issued:
        self._local_grant(PASSWORD)
        if not form.username or form.password is None:
            raise TokenError("invalid_request", "The password grant needs username and password.")
        account = await self.accounts.by_name(form.username, service_account=False)
        stored = account.password_hash if account is not None else None
        # Always one argon2 verification, so an unknown name costs the same time.
        matches = await verify_password(stored, form.password)
        if account is None or not matches or not account.active:
            raise InvalidLogin()
        return self.issuer.session(account.id)

    def api_key(self, caller: AccountCaller | None) -> Issued:
        """The request's ``Authorization: Bearer SVCKEY_...`` was already checked by the
        authentication backend; the session names the key, so it dies with it."""
        self._local_grant(API_KEY)
        if caller is None or caller.api_key_id is None or caller.token is not None:
            raise Unauthorized("Invalid API key.")
        return self.issuer.session(caller.account_id, api_key_id=caller.api_key_id)

    async def device_code(self, form: LoginForm) -> Issued | TokenError:
        """A session for the account that approved the device, naming the device (each
        request re-checks it) and ending no later than the device does. Refusals are
        returned so that the handler commits the failed attempt or poll time first."""
        device = await self.devices.exchange(form.device_id, form.device_code)
        if isinstance(device, TokenError):
            return device
        assert device.account_id is not None
        account = await self.accounts.get(device.account_id)
        if account is None or not account.active:
            return TokenError(
                "access_denied", "The account that approved this device is not active."
            )
        return self.issuer.session(account.id, device_id=device.id, expires_at=device.expires)
