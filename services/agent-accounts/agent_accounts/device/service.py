"""The device flow (RFC 8628 as kitaru's agent server does it).

A device asks for an authorization and gets a device code (256 bits) and a user code
(``XXXX-XXXX`` from a 26-letter alphabet), both from the CSPRNG and stored as SHA-256
hashes. A signed-in account approves it with the user code; the device polls the token
endpoint with its device code and, once approved, gets a session token naming the device.
The device code then stays a refresh credential until the device is deleted, locked or
expired. A wrong user code, typed by a signed-in account at approval, counts; at the
configured maximum the device locks. A wrong device code is ``invalid_grant`` and counts
for nothing: the device id is no secret and 256 bits are not guessed, so counting would
only let a stranger lock a real user's device (kitaru counts every wrong code).

Refusals that change stored state (a failed attempt, a poll time) are *returned*, not
raised, so the handler commits the change and raises after: a rollback must not forgive
a wrong code.
"""

from __future__ import annotations

import datetime as dt
import secrets
import uuid

from sqlmodel.ext.asyncio.session import AsyncSession

from agent_accounts.core.auth import AccountCaller
from agent_accounts.core.credentials import new_secret
from agent_accounts.core.errors import TokenError
from agent_accounts.core.listing import ListQuery
from agent_accounts.core.schemas import aware_utc
from agent_accounts.device.repository import DeviceRepository
from agent_accounts.device.schemas import DeviceAuthorizationForm, DeviceStatus
from agent_accounts.models import Device
from agent_accounts.settings import Settings
from shared.db import Clock
from shared.errors import HTTPDetailError, NotFound, PlatformError
from shared.secret_hash import digest, matches

USER_CODE_ALPHABET = "34679ACDEFGHJKLMNPQRTUVWXY"
USER_CODE_LENGTH = 8


def new_user_code() -> str:
    chars = "".join(secrets.choice(USER_CODE_ALPHABET) for _ in range(USER_CODE_LENGTH))
    return f"{chars[:4]}-{chars[4:]}"


def normalize_user_code(text: str) -> str:
    """``abcd efgh`` or ``ABCDEFGH`` as typed by a person → ``ABCD-EFGH``."""
    chars = "".join(c for c in text.upper() if c.isalnum())
    return f"{chars[:4]}-{chars[4:]}" if len(chars) == USER_CODE_LENGTH else text


def user_code_matches(text: str, stored_hash: str) -> bool:
    return matches(stored_hash, normalize_user_code(text))


class DeviceNotFound(NotFound):
    def __init__(self, device_id: object) -> None:
        super().__init__(f"Device {device_id} was not found")


def _refused(message: str) -> HTTPDetailError:
    return HTTPDetailError(422, message)


def invalid_grant() -> TokenError:
    return TokenError("invalid_grant", "Invalid device code")


class DeviceService:
    def __init__(self, session: AsyncSession, settings: Settings, clock: Clock) -> None:
        self.repository = DeviceRepository(session)
        self.settings = settings
        self.clock = clock

    @property
    def timeout(self) -> int:
        return self.settings.server_device_auth_timeout_seconds

    @property
    def interval(self) -> int:
        return self.settings.server_device_auth_polling_interval_seconds

    async def authorize(
        self, form: DeviceAuthorizationForm, ip_address: str | None
    ) -> tuple[Device, str, str]:
        """A new pending device and its plaintext user code and device code (shown once)."""
        if self.settings.server_auth_scheme != "local":
            raise TokenError(
                "unsupported_grant_type", "This server does not authenticate requests."
            )
        now = self.clock()
        await self.repository.delete_expired(now)
        user_code, device_code = new_user_code(), new_secret()
        device = Device(
            user_code_hash=digest(user_code),
            device_code_hash=digest(device_code),
            expires=now + dt.timedelta(seconds=self.timeout),
            hostname=form.hostname,
            os=form.os,
            python_version=form.python_version,
            client_version=form.client_version,
            ip_address=ip_address,
            created=now,
            updated=now,
        )
        return await self.repository.add(device), user_code, device_code

    def _fail(self, device: Device) -> None:
        device.failed_auth_attempts += 1
        if device.failed_auth_attempts >= self.settings.server_max_failed_device_auth_attempts:
            device.locked = True
        device.updated = self.clock()

    async def verify(
        self, device_id: uuid.UUID, user_code: str, trusted: bool, caller: AccountCaller
    ) -> Device | PlatformError:
        """An account approves a pending device with its user code (422 when locked,
        expired, no longer pending or the code is wrong; a wrong code counts)."""
        device = await self._owned(device_id, caller, allow_unclaimed=True)
        now = self.clock()
        if device.locked:
            return _refused("Device is locked")
        if device.is_expired(now):
            return _refused("Device authorization has expired")
        if device.status != DeviceStatus.PENDING:
            return _refused("Device is not waiting for approval")
        if not user_code_matches(user_code, device.user_code_hash):
            self._fail(device)
            await self.repository.add(device)
            return _refused("Invalid user code")
        device.account_id = caller.account_id
        device.trusted = trusted
        device.failed_auth_attempts = 0
        device.status = DeviceStatus.VERIFIED
        device.updated = now
        return await self.repository.add(device)

    async def exchange(self, device_id: str | None, device_code: str | None) -> Device | TokenError:
        """The device-code grant: the device, now active and bound to the account that
        approved it, or the grant error to answer."""
        if self.settings.server_auth_scheme != "local":
            return TokenError(
                "unsupported_grant_type", "This server does not authenticate requests."
            )
        if not device_id or not device_code:
            return TokenError(
                "invalid_request", "The device grant needs device_id and device_code."
            )
        try:
            device = await self.repository.get(uuid.UUID(device_id))
        except ValueError:
            device = None
        # The code first, and changing nothing: a caller without it learns nothing of
        # the device and cannot lock it.
        if device is None or not matches(device.device_code_hash, device_code):
            return invalid_grant()
        now = self.clock()
        if device.locked:
            return TokenError("access_denied", "Device is locked")
        if device.is_expired(now):
            return TokenError("expired_token", "Device authorization has expired")
        if device.status != DeviceStatus.ACTIVE:
            previous, device.last_polled = device.last_polled, now
            await self.repository.add(device)
            interval = dt.timedelta(seconds=self.interval)
            if previous is not None and now - aware_utc(previous) < interval:
                return TokenError(
                    "slow_down", f"Polling too fast: wait {self.interval} s between requests."
                )
            if device.status == DeviceStatus.PENDING or device.account_id is None:
                return TokenError("authorization_pending", "Device authorization is pending")
            device.status = DeviceStatus.ACTIVE
            device.failed_auth_attempts = 0
            device.expires = self._expiry(device.trusted, now)
        device.last_login = now
        device.updated = now
        return await self.repository.add(device)

    def _expiry(self, trusted: bool, now: dt.datetime) -> dt.datetime | None:
        minutes = (
            self.settings.server_trusted_device_expiration_minutes
            if trusted
            else self.settings.server_device_expiration_minutes
        )
        return None if minutes is None else now + dt.timedelta(minutes=minutes)

    async def _owned(
        self, device_id: uuid.UUID, caller: AccountCaller, *, allow_unclaimed: bool = False
    ) -> Device:
        """The caller's device (or one nobody approved yet); 404 for anyone else's."""
        device = await self.repository.get(device_id)
        if device is None:
            raise DeviceNotFound(device_id)
        if device.account_id == caller.account_id:
            return device
        if allow_unclaimed and device.account_id is None:
            return device
        raise DeviceNotFound(device_id)

    async def get(
        self, device_id: uuid.UUID, caller: AccountCaller, user_code: str | None
    ) -> Device:
        """The caller's device, or an unapproved one whose user code the caller knows."""
        device = await self.repository.get(device_id, for_update=False)
        if device is not None and device.account_id == caller.account_id:
            return device
        if (
            device is not None
            and device.account_id is None
            and user_code is not None
            and user_code_matches(user_code, device.user_code_hash)
        ):
            return device
        raise DeviceNotFound(device_id)

    async def list(
        self, caller: AccountCaller, query: ListQuery
    ) -> tuple[list[Device], str | None]:
        return await self.repository.list(caller.account_id, query)

    async def update(
        self,
        device_id: uuid.UUID,
        caller: AccountCaller,
        *,
        locked: bool | None,
        trusted: bool | None,
    ) -> Device:
        """Lock or unlock (unlocking forgives the failed attempts), trust or distrust."""
        device = await self._owned(device_id, caller)
        if locked is not None:
            device.locked = locked
            if not locked:
                device.failed_auth_attempts = 0
        if trusted is not None:
            device.trusted = trusted
        device.updated = self.clock()
        return await self.repository.add(device)

    async def delete(self, device_id: uuid.UUID, caller: AccountCaller) -> None:
        """Its sessions stop working and its device code is no longer a credential."""
        await self.repository.delete(await self._owned(device_id, caller))
