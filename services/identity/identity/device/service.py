"""The device authorization flow (RFC 8628) and the caller's authorized devices.

Codes come from ``secrets`` (the reference's lengths: a 64-hex device code, a 32-hex user
code, 256 and 128 bits) and only their SHA-256 is stored. A wrong user code, typed by a
logged-in user at verification, counts against the device and the
``max_failed_device_auth_attempts``-th failure locks it. A wrong device code when polling
is ``invalid_grant`` and counts nothing against the device: anyone who knows a client id
may poll, and 256 bits are not guessed, so counting would only let a stranger lock (and
revoke) the device of a real user (the reference counts them). It, and a poll naming an
unknown client, raise :class:`DeviceCodeRefused`, which the login throttle counts (per
client id and address); a poll with the right code never counts. Failures that must be
remembered are returned (not raised) as :class:`Refused`, so that the handler commits
them before answering.

Tokens issued to a device carry its id. Locking or deleting the device revokes them on
every service (the shared revocation list); authorizing the same client again revokes
what the device held before.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
import secrets
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlencode

from sqlalchemy.exc import SQLAlchemyError
from sqlmodel.ext.asyncio.session import AsyncSession

from identity.core.auth import acting_user
from identity.device.repository import DeviceRepository
from identity.device.schemas import OAuthDeviceUpdate, OAuthDeviceVerificationRequest
from identity.models import DeviceStatus, OAuthDevice, User
from identity.server_settings.repository import ServerSettingsRepository
from identity.settings import Settings
from shared.auth import Principal, RevocationList
from shared.db import Clock, SessionMaker, session_scope
from shared.errors import BadRequest, Forbidden, NotFound, OAuthError, PlatformError
from shared.listing import Listing
from shared.onboarding import OnboardingStep
from shared.secret_hash import digest, matches

DEVICE_CODE_BYTES = 32
USER_CODE_BYTES = 16
USER_CODE_ALPHABET = "0123456789abcdef"
USER_CODE_LENGTH = 2 * USER_CODE_BYTES
LAST_LOGIN_PRECISION = dt.timedelta(minutes=1)
"""``last_login`` is rewritten at most this often, so using a device costs few writes."""
SLOW_DOWN_STEP = 5
"""Seconds a ``slow_down`` adds to the device's polling interval (RFC 8628 §3.5)."""
VERIFY_PATH = "/devices/verify"

logger = logging.getLogger("platform.audit")

_USER_CODE = re.compile(f"[{USER_CODE_ALPHABET}]{{{USER_CODE_LENGTH}}}")
_SEPARATORS = re.compile(r"[\s-]+")
# The words of the zenml client's User-Agent and the device fields they fill.
_USER_AGENT_FIELDS = {
    "Host": "hostname",
    "ZenML": "zenml_version",
    "Python": "python_version",
    "OS": "os",
}


def normalize_user_code(raw: str) -> str | None:
    """The code as issued, or ``None`` when it cannot be one: case and the hyphens or
    spaces people add are ignored (RFC 8628 §6.1)."""
    code = _SEPARATORS.sub("", raw).lower()
    return code if _USER_CODE.fullmatch(code) else None


@dataclass(frozen=True)
class DeviceDetails:
    """What the client tells about itself (``User-Agent``) and where it calls from."""

    ip_address: str | None = None
    hostname: str | None = None
    os: str | None = None
    python_version: str | None = None
    zenml_version: str | None = None

    @classmethod
    def from_user_agent(cls, header: str | None, ip_address: str | None) -> DeviceDetails:
        """Parse ``Host/<h> ZenML/<v> Python/<v> OS/<os>``; other words are ignored."""
        found: dict[str, str] = {}
        for word in (header or "").split():
            key, sep, value = word.partition("/")
            if sep and key in _USER_AGENT_FIELDS and value:
                found[_USER_AGENT_FIELDS[key]] = value[:64]
        return cls(ip_address=(ip_address or None) and ip_address[:64], **found)


@dataclass(frozen=True)
class Authorization:
    device: OAuthDevice
    device_code: str
    user_code: str
    verification_uri: str
    verification_uri_complete: str
    expires_in: int
    interval: int


@dataclass(frozen=True)
class Refused:
    """A refusal whose side effects (a counted failure, a widened interval) are kept."""

    error: PlatformError


class DeviceNotFound(NotFound):
    def __init__(self, device_id: uuid.UUID) -> None:
        super().__init__(
            f"Unable to get authorized device with ID '{device_id}': "
            "No authorized device with this ID found"
        )


class DeviceNotVisible(NotFound):
    """Another user's device, or a pending one asked for without its user code."""

    def __init__(self, device_id: uuid.UUID) -> None:
        super().__init__(
            f"'Unable to get device with ID {device_id}: No device with this ID found.'"
        )


class DeviceCodeRefused(OAuthError):
    """A poll naming no registered client, or the wrong device code: a guess, which the
    login throttle counts. The other refusals of a poll (the code already used, the device
    locked or expired) come from a caller holding the right code, and count for nothing."""


class InvalidVerification(BadRequest):
    def __init__(self, reason: str) -> None:
        super().__init__(f"Invalid request: {reason}")


def _seconds(value: dt.timedelta) -> int:
    return int(value.total_seconds())


class DeviceService:
    def __init__(
        self,
        session: AsyncSession,
        settings: Settings,
        revocations: RevocationList,
        clock: Clock,
    ) -> None:
        self.repository = DeviceRepository(session)
        self.settings = settings
        self.revocations = revocations
        self.clock = clock

    # The flow: authorize (device), verify (user), redeem (device).

    async def authorize(self, client_id: uuid.UUID, details: DeviceDetails) -> Authorization:
        """A device for ``client_id`` in state pending, with fresh codes.

        A known client keeps its device id; its old codes stop working and the tokens it
        was issued before are revoked.
        """
        now = self.clock()
        await self.repository.delete_expired(now - self.settings.device_auth_timeout)
        device = await self.repository.by_client_id(client_id, for_update=True)
        if device is None:
            device = OAuthDevice(
                client_id=client_id, device_code_hash="", user_code_hash="", created=now
            )
        else:
            await self.revocations.revoke_device_before(device.id, before=now)
            await self.revocations.restore_device(device.id)
        device_code = secrets.token_hex(DEVICE_CODE_BYTES)
        user_code = secrets.token_hex(USER_CODE_BYTES)
        interval = max(1, _seconds(self.settings.device_auth_polling_interval))
        device.device_code_hash = digest(device_code)
        device.user_code_hash = digest(user_code)
        device.status = DeviceStatus.PENDING
        device.trusted_device = False
        device.failed_auth_attempts = 0
        device.expires = now + self.settings.device_auth_timeout
        device.polled_at = None
        device.poll_interval = interval
        device.ip_address = details.ip_address
        for name in ("hostname", "os", "python_version", "zenml_version"):
            value = getattr(details, name)
            if value is not None:
                setattr(device, name, value)
        device.updated = now
        self.repository.add(device)
        await self.repository.session.flush()
        base = (self.settings.dashboard_url or self.settings.server_url).rstrip("/")
        uri = base + VERIFY_PATH
        query = urlencode({"device_id": str(device.id), "user_code": user_code})
        return Authorization(
            device=device,
            device_code=device_code,
            user_code=user_code,
            verification_uri=uri,
            verification_uri_complete=f"{uri}?{query}",
            expires_in=_seconds(self.settings.device_auth_timeout),
            interval=interval,
        )

    async def verify(
        self, user: User, device_id: uuid.UUID, request: OAuthDeviceVerificationRequest
    ) -> OAuthDevice | Refused:
        """Bind a pending device to ``user`` when the user code matches."""
        if user.is_service_account:
            # Its tokens must live and die with the API key it logged in with.
            raise Forbidden("Service accounts log in with their API keys, not with devices.")
        device = await self.repository.get(device_id, for_update=True)
        if device is None:
            raise DeviceNotFound(device_id)
        if device.status != DeviceStatus.PENDING:
            raise InvalidVerification("device not pending verification.")
        if device.expires is not None and device.expires <= self.clock():
            raise InvalidVerification("device verification expired.")
        if device.user_id is not None and device.user_id != user.id:
            raise InvalidVerification("this device is associated with another user.")
        code = normalize_user_code(request.user_code)
        if code is None or not matches(device.user_code_hash, code):
            if await self._count_failure(device):
                reason = "device locked due to too many failed authentication attempts."
            else:
                reason = "invalid user code."
            return Refused(InvalidVerification(reason))
        logger.info("device verified", extra={"device_id": str(device.id), "user_id": str(user.id)})
        device.status = DeviceStatus.VERIFIED
        device.user_id = user.id
        device.failed_auth_attempts = 0
        device.trusted_device = request.trusted_device
        await ServerSettingsRepository(self.repository.session).complete_steps(
            {OnboardingStep.DEVICE_VERIFIED}, self.clock()
        )
        return await self._save(device)

    async def redeem(self, client_id: uuid.UUID, device_code: str) -> OAuthDevice | Refused:
        """The poll of the device-code grant: the device, made active, once its user has
        verified it; otherwise the RFC 8628 answer."""
        device = await self.repository.by_client_id(client_id, for_update=True)
        if device is None:
            raise DeviceCodeRefused(
                "invalid_client", f"No device is registered for client {client_id}."
            )
        # First, and changing nothing: a caller without the code learns nothing of the
        # device and cannot lock it.
        if not matches(device.device_code_hash, device_code):
            raise DeviceCodeRefused("invalid_grant", "The device code is not valid.")
        if device.status == DeviceStatus.LOCKED:
            raise OAuthError("access_denied", "The device is locked.")
        if device.status == DeviceStatus.ACTIVE:
            raise OAuthError("invalid_grant", "The device code has already been used.")
        now = self.clock()
        if device.expires is not None and device.expires <= now:
            raise OAuthError("expired_token", "The device code has expired.")
        polled_at, device.polled_at = device.polled_at, now
        if polled_at is not None and (now - polled_at).total_seconds() < device.poll_interval:
            device.poll_interval += SLOW_DOWN_STEP
            await self._save(device)
            return Refused(
                OAuthError("slow_down", f"Poll at most every {device.poll_interval} seconds.")
            )
        if device.status == DeviceStatus.PENDING:
            await self._save(device)
            return Refused(
                OAuthError("authorization_pending", "The user has not verified the device yet.")
            )
        lifetime = (
            self.settings.trusted_device_expiration
            if device.trusted_device
            else self.settings.device_expiration
        )
        device.status = DeviceStatus.ACTIVE
        device.expires = now + lifetime
        device.last_login = now
        return await self._save(device)

    # The caller's devices.

    async def owner(self, caller: Principal) -> User:
        """The user whose devices the request manages: the active user behind a managing
        token (see :func:`~identity.core.auth.acting_user`)."""
        return await acting_user(self.repository.session, caller)

    async def get(
        self, user: User, device_id: uuid.UUID, user_code: str | None = None
    ) -> OAuthDevice:
        """The caller's device, or an unbound one whose user code is given."""
        device = await self.repository.get(device_id)
        if device is None:
            raise DeviceNotFound(device_id)
        if device.user_id == user.id:
            return device
        code = normalize_user_code(user_code) if user_code is not None else None
        if device.user_id is None and code is not None and matches(device.user_code_hash, code):
            return device
        raise DeviceNotVisible(device_id)

    async def owned(self, user: User, device_id: uuid.UUID) -> OAuthDevice:
        device = await self.repository.get(device_id, for_update=True)
        if device is None:
            raise DeviceNotFound(device_id)
        if device.user_id != user.id:
            raise DeviceNotVisible(device_id)
        return device

    async def list(self, user: User, listing: Listing) -> tuple[int, list[OAuthDevice]]:
        return await self.repository.list(listing, user.id)

    async def update(self, device: OAuthDevice, update: OAuthDeviceUpdate) -> bool:
        """Lock or unlock; returns whether the device's tokens must be restored once the
        change is committed (revoking happens at once, inside the transaction)."""
        if update.locked is True and device.status != DeviceStatus.LOCKED:
            await self.revocations.revoke_device(device.id)
            device.status = DeviceStatus.LOCKED
            await self._save(device)
        elif update.locked is False and device.status == DeviceStatus.LOCKED:
            device.status = DeviceStatus.ACTIVE
            await self._save(device)
            return True
        return False

    async def delete(self, device: OAuthDevice) -> None:
        await self.revocations.revoke_device(device.id)
        await self.repository.delete(device)
        await self.repository.session.flush()

    async def user_of(self, device: OAuthDevice) -> User | None:
        return await self.repository.user(device.user_id)

    async def users_of(self, devices: Sequence[OAuthDevice]) -> dict[uuid.UUID, User]:
        return await self.repository.users({d.user_id for d in devices if d.user_id})

    async def _count_failure(self, device: OAuthDevice) -> bool:
        """Count a failed attempt; returns whether it locked the device."""
        device.failed_auth_attempts += 1
        locked = device.failed_auth_attempts >= self.settings.max_failed_device_auth_attempts
        if locked:
            device.status = DeviceStatus.LOCKED
            await self.revocations.revoke_device(device.id)
            logger.warning(
                "device locked after failed attempts", extra={"device_id": str(device.id)}
            )
        await self._save(device)
        return locked

    async def _save(self, device: OAuthDevice) -> OAuthDevice:
        device.updated = self.clock()
        self.repository.add(device)
        await self.repository.session.flush()
        return device


async def record_device_use(
    sessionmaker: SessionMaker, device_id: uuid.UUID, now: dt.datetime
) -> None:
    """Move the device's ``last_login`` to ``now`` (at most once a minute).

    Best effort, in its own short transaction: a busy database must not fail the
    request that used the device, so a failure is logged and otherwise ignored.
    """
    try:
        async with session_scope(sessionmaker) as session:
            await DeviceRepository(session).touch(device_id, now, LAST_LOGIN_PRECISION)
    except SQLAlchemyError:
        logger.warning("could not record the use of a device", extra={"device_id": str(device_id)})
