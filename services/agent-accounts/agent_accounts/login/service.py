"""The token endpoint's grants: password, API key and device code.

Failures answer kitaru's way: a wrong username or password is one uniform 401 (a dummy
hash is checked when the user does not exist, so timing does not tell either); grant
errors are 400 ``{"error": <code>, "detail": <message>}``.

Every grant is throttled (:mod:`shared.throttle`, which kitaru does not do): a wrong
password counts against the user name, a refused API key against the key's id, a wrong
device code or unknown device against the device id, and each against the client address;
past the limits the grant answers 429 ``{"detail"}`` with ``Retry-After`` before checking
anything.
"""

from __future__ import annotations

import math

from sqlmodel.ext.asyncio.session import AsyncSession

from agent_accounts.account.repository import AccountRepository
from agent_accounts.core.auth import AccountCaller
from agent_accounts.core.credentials import decode_api_key
from agent_accounts.core.errors import TokenError
from agent_accounts.core.tokens import SignedToken, TokenIssuer
from agent_accounts.device.service import DeviceService
from agent_accounts.login.schemas import LoginForm, TokenResponse
from agent_accounts.settings import Settings
from shared.db import Clock
from shared.errors import Unauthorized
from shared.passwords import verify_password
from shared.throttle import LoginThrottle

PASSWORD = "password"
API_KEY = "api-key"
DEVICE_CODE = "urn:ietf:params:oauth:grant-type:device_code"


class InvalidLogin(Unauthorized):
    def __init__(self) -> None:
        super().__init__("Invalid username or password.")


def resolve_grant(form: LoginForm, settings: Settings) -> str:
    """The grant a login asks for. Without ``grant_type`` it is inferred as kitaru's server
    does (its UI posts only ``username`` and ``password``): a user name means the password
    grant, a device code the device-code grant, and anything else the password grant under
    the local scheme. The api-key grant is never inferred: it must be named."""
    if form.grant_type is not None:
        return form.grant_type
    if form.username is not None:
        return PASSWORD
    if form.device_code is not None:
        return DEVICE_CODE
    if settings.server_auth_scheme == "local":
        return PASSWORD
    raise TokenError("invalid_request", "The grant_type parameter is required.")


def token_response(issued: SignedToken) -> TokenResponse:
    return TokenResponse(
        access_token=issued.token,
        expires_in=max(0, math.floor(issued.lifetime.total_seconds()) - 1),
    )


def api_key_subject(bearer: str | None) -> str | None:
    """What an api-key grant names to the throttle: the presented key's id, if it has one."""
    decoded = decode_api_key(bearer) if bearer is not None else None
    return f"api-key:{decoded[0]}" if decoded is not None else None


class LoginService:
    """``client`` is the client address the throttle counts (``None`` when unknown)."""

    def __init__(
        self,
        session: AsyncSession,
        settings: Settings,
        issuer: TokenIssuer,
        clock: Clock,
        throttle: LoginThrottle,
        client: str | None,
    ) -> None:
        self.accounts = AccountRepository(session)
        self.devices = DeviceService(session, settings, clock)
        self.settings = settings
        self.issuer = issuer
        self.throttle = throttle
        self.client = client

    def _local_grant(self, grant_type: str) -> None:
        if self.settings.server_auth_scheme != "local":
            raise TokenError(
                "unsupported_grant_type", f"This server does not accept the {grant_type} grant."
            )

    async def password(self, form: LoginForm) -> SignedToken:
        self._local_grant(PASSWORD)
        if not form.username or form.password is None:
            raise TokenError("invalid_request", "The password grant needs username and password.")
        subject = f"user:{form.username}"
        await self.throttle.check(subject, self.client)
        account = await self.accounts.by_name(form.username, service_account=False)
        stored = account.password_hash if account is not None else None
        # Always one argon2 verification, so an unknown name costs the same time.
        matches = await verify_password(stored, form.password)
        if account is None or not matches or not account.active:
            await self.throttle.failed(subject, self.client)
            raise InvalidLogin()
        await self.throttle.succeeded(subject, self.client)
        return self.issuer.session(account.id)

    async def api_key(self, caller: AccountCaller | None, bearer: str | None) -> SignedToken:
        """The request's ``Authorization: Bearer KITKEY_...`` (``bearer``) was already
        checked by the authentication backend, which made ``caller``; the session names
        the key, so it dies with it."""
        self._local_grant(API_KEY)
        subject = api_key_subject(bearer)
        await self.throttle.check(subject, self.client)
        if caller is None or caller.api_key_id is None or caller.token is not None:
            await self.throttle.failed(subject, self.client)
            raise Unauthorized("Invalid API key.")
        await self.throttle.succeeded(f"api-key:{caller.api_key_id}", self.client)
        return self.issuer.session(caller.account_id, api_key_id=caller.api_key_id)

    async def device_code(self, form: LoginForm) -> SignedToken | TokenError:
        """A session for the account that approved the device, naming the device (each
        request re-checks it) and ending no later than the device does. Refusals are
        returned so that the handler commits the failed attempt or poll time first; only
        a wrong code or an unknown device counts toward the throttle (a pending device's
        polls do not)."""
        subject = f"device:{form.device_id}" if form.device_id else None
        await self.throttle.check(subject, self.client)
        device = await self.devices.exchange(form.device_id, form.device_code)
        if isinstance(device, TokenError):
            if device.error == "invalid_grant":
                await self.throttle.failed(subject, self.client)
            return device
        assert device.account_id is not None
        account = await self.accounts.get(device.account_id)
        if account is None or not account.active:
            return TokenError(
                "access_denied", "The account that approved this device is not active."
            )
        if subject is not None:
            await self.throttle.succeeded(subject, self.client)
        return self.issuer.session(account.id, device_id=device.id, expires_at=device.expires)
