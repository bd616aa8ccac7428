"""Token issuing: which grant, which checks, which claims."""

from __future__ import annotations

import hmac
import logging
import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from identity.api_key.service import APIKeyService
from identity.auth.schemas import GrantType, LoginForm, OAuthTokenResponse
from identity.device.service import DeviceCodeRefused, DeviceService, Refused
from identity.models import User
from identity.settings import Settings
from identity.signing_key.service import KeyRing
from identity.user.service import UserService
from shared.auth import (
    APIKeyRefused,
    APIKeyToken,
    EncodedKey,
    RevocationList,
    TokenKind,
    VerifiedToken,
    WorkloadScope,
)
from shared.db import Clock, SessionMaker, session_scope
from shared.errors import HTTPDetailError, OAuthError, Unauthorized
from shared.http import CachedTokenAuth
from shared.throttle import LoginThrottle

logger = logging.getLogger("platform.audit")


class InvalidCredentials(Unauthorized):
    def __init__(self) -> None:
        super().__init__("Authentication error: invalid username or password")


@dataclass
class TokenGrant:
    response: OAuthTokenResponse
    set_cookie: bool
    lifetime: timedelta | None


def password_subject(username: str) -> str:
    """The account a password login names, as the login throttle counts it."""
    return f"user:{username}"


def api_key_claims(token: VerifiedToken) -> dict[str, Any]:
    """The API key claims (``api_key_id``, ``key_gen``) ``token`` carries, for a token
    minted from it to die with the same key."""
    return {name: token.claims[name] for name in ("api_key_id", "key_gen") if name in token.claims}


def infer_grant(form: LoginForm) -> str:
    """The reference's order when ``grant_type`` is absent."""
    if form.grant_type:
        return form.grant_type
    if form.username is not None:
        return GrantType.PASSWORD
    if form.password is not None:
        return GrantType.API_KEY
    if form.device_code is not None:
        return GrantType.DEVICE_CODE
    return GrantType.PASSWORD


class TokenService:
    def __init__(self, settings: Settings, keyring: KeyRing, clock: Clock) -> None:
        self.settings = settings
        self.keyring = keyring
        self.clock = clock

    async def issue_for_user(
        self,
        user: User,
        kind: str,
        lifetime: timedelta | None,
        *,
        device_id: uuid.UUID | None = None,
        scope: WorkloadScope | None = None,
        api_key: dict[str, Any] | None = None,
    ) -> str:
        """A token of ``user``; with ``device_id`` it lives and dies with that device, with
        ``api_key`` (:func:`api_key_claims`) with that API key's generation, with
        ``scope`` (workload tokens) it is bound to that object."""
        signer = await self.keyring.signer()
        extra: dict[str, Any] = {"name": user.name, "admin": user.is_admin}
        if device_id is not None:
            extra["device_id"] = device_id
        if api_key:
            extra.update(api_key)
        if scope is not None:
            extra.update(scope.claims())
        token, _ = signer.issue(
            subject=str(user.id),
            kind=kind,
            audience=self.settings.jwt_audience,
            lifetime=lifetime,
            extra=extra,
            now=self.clock(),
        )
        return token

    async def issue_for_service(self, client_id: str) -> str:
        """A service token (``service_token_lifetime``) for the service ``client_id``."""
        signer = await self.keyring.signer()
        token, _ = signer.issue(
            subject=f"service:{client_id}",
            kind=TokenKind.SERVICE,
            audience=self.settings.jwt_audience,
            lifetime=self.settings.service_token_lifetime,
            extra={"name": client_id},
            now=self.clock(),
        )
        return token

    async def login(
        self,
        form: LoginForm,
        users: UserService,
        devices: DeviceService,
        api_keys: APIKeyService,
        throttle: LoginThrottle,
        client: str | None,
    ) -> TokenGrant | Refused:
        """The grant's answer; a :class:`Refused` carries a device-grant error whose
        bookkeeping (failed attempt, widened interval) must be committed first."""
        grant = infer_grant(form)
        if grant == GrantType.PASSWORD:
            return await self._password(form, users, throttle, client)
        if grant == GrantType.CLIENT_CREDENTIALS:
            return await self._client_credentials(form, client)
        if grant == GrantType.API_KEY:
            return await self._api_key(form, api_keys, throttle, client)
        if grant == GrantType.DEVICE_CODE:
            return await self._device_code(form, users, devices, throttle, client)
        if grant == GrantType.EXTERNAL:
            raise HTTPDetailError(400, "Unsupported grant type: zenml-external.")
        raise HTTPDetailError(400, f"Unsupported grant type: {grant}")

    async def _password(
        self, form: LoginForm, users: UserService, throttle: LoginThrottle, client: str | None
    ) -> TokenGrant:
        if not form.username:
            raise HTTPDetailError(400, "Invalid request: username is required.")
        subject = password_subject(form.username)
        await throttle.check(subject, client)
        user = await users.authenticate(form.username, form.password or "")
        if user is None:
            # Never the name typed: a password typed into the name field would be logged.
            named = await users.repository.by_name(form.username)
            logger.info(
                "login failed",
                extra={
                    "user_id": str(named.id) if named else None,
                    "reason": "wrong password or inactive" if named else "unknown user",
                    "client": client,
                },
            )
            await throttle.failed(subject, client)
            raise InvalidCredentials()
        await throttle.succeeded(subject, client)
        lifetime = self.settings.access_token_lifetime
        token = await self.issue_for_user(user, TokenKind.ACCESS, lifetime)
        logger.info("login succeeded", extra={"user_id": str(user.id), "client": client})
        return TokenGrant(
            OAuthTokenResponse(access_token=token, expires_in=int(lifetime.total_seconds())),
            set_cookie=True,
            lifetime=lifetime,
        )

    async def _api_key(
        self, form: LoginForm, api_keys: APIKeyService, throttle: LoginThrottle, client: str | None
    ) -> TokenGrant:
        if not form.password:
            raise HTTPDetailError(400, "API key is required.")
        return await self.api_key_login(form.password, api_keys, throttle, client)

    async def api_key_login(
        self, key: str, api_keys: APIKeyService, throttle: LoginThrottle, client: str | None
    ) -> TokenGrant:
        """A service account's login with its ``ZENKEY_`` key, throttled like the password
        grant per key (an undecodable key counts against the client only). No cookie.
        The login grant's, and every service's exchange of a key presented as a bearer."""
        decoded = EncodedKey.decode(key)
        subject = f"api-key:{decoded.id}" if decoded else None
        await throttle.check(subject, client)
        try:
            if decoded is None:
                raise APIKeyRefused("error decoding API key")
            logged_in = await api_keys.authenticate(decoded.id, decoded.key)
        except APIKeyRefused as exc:
            # The id of a stored key only: what was presented could be anything secret.
            logger.info(
                "api key login failed",
                extra={
                    "api_key_id": str(exc.key_id) if exc.key_id else None,
                    "reason": "refused" if exc.key_id else "unknown key",
                    "client": client,
                },
            )
            await throttle.failed(subject, client)
            raise
        await throttle.succeeded(f"api-key:{decoded.id}", client)
        lifetime = self.settings.access_token_lifetime
        api_key = {"api_key_id": str(logged_in.api_key.id), "key_gen": logged_in.generation}
        token = await self.issue_for_user(
            logged_in.account, TokenKind.ACCESS, lifetime, api_key=api_key
        )
        logger.info(
            "api key login succeeded",
            extra={"user_id": str(logged_in.account.id), "api_key_id": api_key["api_key_id"]},
        )
        return TokenGrant(
            OAuthTokenResponse(access_token=token, expires_in=int(lifetime.total_seconds())),
            set_cookie=False,
            lifetime=lifetime,
        )

    async def _device_code(
        self,
        form: LoginForm,
        users: UserService,
        devices: DeviceService,
        throttle: LoginThrottle,
        client: str | None,
    ) -> TokenGrant | Refused:
        """Throttled like the password grant, per client id: an unknown client or a wrong
        device code counts (:class:`DeviceCodeRefused`); the polls of a pending device, and
        of one already redeemed, locked or expired, do not."""
        if not form.device_code or not form.client_id:
            raise HTTPDetailError(400, "Invalid request: device code and client ID are required.")
        try:
            client_id = uuid.UUID(form.client_id)
        except ValueError:
            raise HTTPDetailError(400, "Invalid request: invalid client ID.") from None
        subject = f"device:{client_id}"
        await throttle.check(subject, client)
        try:
            outcome = await devices.redeem(client_id, form.device_code)
        except DeviceCodeRefused:
            await throttle.failed(subject, client)
            raise
        if isinstance(outcome, Refused):
            logger.info(
                "device poll refused",
                extra={"client_id": str(client_id), "error": getattr(outcome.error, "error", "")},
            )
            return outcome
        device = outcome
        user = await users.repository.get(device.user_id) if device.user_id else None
        if user is None or not user.active or device.expires is None:
            raise OAuthError("access_denied", "The device's user may no longer log in.")
        await throttle.succeeded(subject, client)
        lifetime = device.expires - self.clock()
        token = await self.issue_for_user(user, TokenKind.DEVICE, lifetime, device_id=device.id)
        logger.info(
            "device login succeeded", extra={"user_id": str(user.id), "device_id": str(device.id)}
        )
        return TokenGrant(
            OAuthTokenResponse(
                access_token=token,
                expires_in=int(lifetime.total_seconds()),
                device_id=device.id,
            ),
            set_cookie=False,
            lifetime=lifetime,
        )

    async def _client_credentials(self, form: LoginForm, client: str | None) -> TokenGrant:
        expected = self.settings.service_clients.get(form.client_id or "")
        supplied = (form.client_secret or "").encode()
        # Compare against something even for an unknown client, in constant time.
        reference = expected.get_secret_value().encode() if expected else b"\0" * 32
        if expected is None or not hmac.compare_digest(reference, supplied):
            # The client id only when it is one we know: a secret may be typed in its place.
            logger.info(
                "client authentication failed",
                extra={"client_id": form.client_id if expected else None, "client": client},
            )
            raise OAuthError("invalid_client", "Client authentication failed.", status_code=401)
        lifetime = self.settings.service_token_lifetime
        token = await self.issue_for_service(form.client_id or "")
        return TokenGrant(
            OAuthTokenResponse(access_token=token, expires_in=int(lifetime.total_seconds())),
            set_cookie=False,
            lifetime=lifetime,
        )


class OwnServiceAuth(CachedTokenAuth):
    """Identity's own calls to other services (tracking's workload scopes): it signs its
    service token itself instead of asking itself for one over HTTP."""

    def __init__(self, tokens: TokenService) -> None:
        super().__init__()
        self._tokens = tokens

    async def fetch(self) -> tuple[str, float]:
        token = await self._tokens.issue_for_service(self._tokens.settings.service_name)
        return token, self._tokens.settings.service_token_lifetime.total_seconds()


class OwnKeySource:
    """Identity's own exchange of a ``ZENKEY_`` bearer (:mod:`shared.auth.api_keys`): the
    API-key login, in process, in a transaction of its own. The other services ask for it
    at ``POST /internal/v1/api_key_tokens``."""

    def __init__(
        self,
        sessionmaker: SessionMaker,
        tokens: TokenService,
        revocations: RevocationList,
        throttle: LoginThrottle,
    ) -> None:
        self._sessionmaker = sessionmaker
        self._tokens = tokens
        self._revocations = revocations
        self._throttle = throttle

    async def exchange(self, api_key: str, client: str | None) -> APIKeyToken:
        async with session_scope(self._sessionmaker) as session:
            api_keys = APIKeyService(session, self._revocations, self._tokens.clock)
            issued = await self._tokens.api_key_login(api_key, api_keys, self._throttle, client)
        return APIKeyToken(
            access_token=issued.response.access_token,
            expires_in=issued.response.expires_in or 0,
        )
