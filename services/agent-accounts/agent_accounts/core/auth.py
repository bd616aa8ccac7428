"""Who is calling: an account (session token, API key, or the default account under the
``none`` scheme), a worker (worker token) or a task attempt (task token).

The backend never refuses a request itself; handlers ask for the caller they need with
:func:`require_account`, :func:`require_worker` or :func:`require_task`. Every request
reloads the account behind its credential and requires it to be active, so deactivating an
account ends its sessions, worker and task tokens on the next request, on every replica. A
deactivation, an activation and a password change also set a cutoff on the account row
(``tokens_valid_after``): tokens issued before it stay dead, after the account is activated
again too, except the session that changed its own password (``tokens_kept_jti``). A token
obtained with an API key names the key, and stops working when the key is deactivated or
deleted.
"""

from __future__ import annotations

import datetime as dt
import logging
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from redis.exceptions import RedisError
from sqlmodel import col, update
from starlette.authentication import AuthCredentials, AuthenticationBackend, BaseUser
from starlette.requests import HTTPConnection

from agent_accounts.core.credentials import decode_api_key, is_api_key
from agent_accounts.core.schemas import aware_utc
from agent_accounts.core.tokens import ALL_KINDS, AgentTokenKind
from agent_accounts.models import Account, ApiKey, Device, Task, Worker
from agent_accounts.state import AgentState
from shared.auth import (
    InvalidToken,
    RefusedCaller,
    VerifiedToken,
    bearer_token,
)
from shared.db import session_scope
from shared.errors import Forbidden, Unauthorized
from shared.metrics import TOKEN_VERIFICATIONS
from shared.secret_hash import matches

logger = logging.getLogger(__name__)


# A device's last_login is written at most this often by the requests it makes.
DEVICE_LOGIN_INTERVAL = dt.timedelta(seconds=60)


@dataclass
class Caller(BaseUser):
    """An authenticated caller and the (active) account it acts for."""

    account: Account
    subject: str
    token: VerifiedToken | None = field(default=None, repr=False)

    @property
    def is_authenticated(self) -> bool:
        return True

    @property
    def display_name(self) -> str:
        return self.account.name

    @property
    def identity(self) -> str:
        return self.subject

    @property
    def account_id(self) -> uuid.UUID:
        return self.account.id


@dataclass
class AccountCaller(Caller):
    api_key_id: uuid.UUID | None = None
    """The key that authenticated the request, or that the session was obtained with."""


@dataclass
class WorkerCaller(Caller):
    worker_id: uuid.UUID = field(default_factory=uuid.uuid4)


@dataclass
class TaskCaller(Caller):
    task_id: uuid.UUID = field(default_factory=uuid.uuid4)
    attempt: int = 0
    worker_id: uuid.UUID | None = None
    sessions: frozenset[uuid.UUID] = frozenset()
    blobs: frozenset[uuid.UUID] = frozenset()


def _unauthorized(reason: str) -> Unauthorized:
    return Unauthorized(reason, headers={"WWW-Authenticate": 'Bearer error="invalid_token"'})


def require_caller(conn: HTTPConnection) -> Caller:
    """Any authenticated caller: account, worker or task (401 otherwise)."""
    user = conn.user
    if isinstance(user, RefusedCaller):
        raise _unauthorized(user.reason)
    if not isinstance(user, Caller):
        raise Unauthorized("Missing bearer credential.")
    return user


def require_account(conn: HTTPConnection) -> AccountCaller:
    """An account caller (session, API key or the default account); workers and tasks get
    403 here."""
    caller = require_caller(conn)
    if isinstance(caller, WorkerCaller):
        raise Forbidden("Worker credentials are not accepted on this route.")
    if isinstance(caller, TaskCaller):
        raise Forbidden("Task credentials are not accepted on this route.")
    assert isinstance(caller, AccountCaller)
    return caller


def require_admin(conn: HTTPConnection, permission: str) -> AccountCaller:
    """An admin account, else 403 ``Insufficient permissions for <permission>``."""
    caller = require_account(conn)
    ensure_admin(caller, permission)
    return caller


def require_worker(conn: HTTPConnection) -> WorkerCaller:
    caller = require_caller(conn)
    if not isinstance(caller, WorkerCaller):
        raise Forbidden("A worker credential is required on this route.")
    return caller


def require_task(conn: HTTPConnection) -> TaskCaller:
    caller = require_caller(conn)
    if not isinstance(caller, TaskCaller):
        raise Forbidden("A task credential is required on this route.")
    return caller


def _uuid(value: Any) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None


def _subject_id(token: VerifiedToken, prefix: str) -> uuid.UUID | None:
    head, sep, rest = token.subject.partition(":")
    return _uuid(rest) if sep and head == prefix else None


class AgentAuthBackend(AuthenticationBackend):
    """Resolves the caller from ``Authorization: Bearer`` (see the module docstring).

    Reads the service's state (:class:`~agent_accounts.state.AgentState`).
    """

    async def authenticate(self, conn: HTTPConnection) -> tuple[AuthCredentials, BaseUser] | None:
        state = AgentState.of(conn)
        settings = state.settings
        raw = bearer_token(conn)
        resolver = _Resolver(state)
        if settings.server_auth_scheme == "none":
            # A valid worker or task token still resolves to its own principal; anything
            # else, garbage included, runs as the default account.
            user: BaseUser | None = None
            if raw is not None and not is_api_key(raw):
                user = await resolver.from_token(
                    raw, kinds=(AgentTokenKind.WORKER, AgentTokenKind.TASK)
                )
            if not isinstance(user, Caller):
                user = await resolver.default_account()
        elif raw is None:
            return None
        elif is_api_key(raw):
            user = await resolver.from_api_key(raw)
        else:
            user = await resolver.from_token(raw, kinds=ALL_KINDS)
        if isinstance(user, Caller):
            return AuthCredentials(["authenticated"]), user
        return AuthCredentials([]), user


class _Resolver:
    def __init__(self, state: AgentState) -> None:
        self.settings = state.settings
        self.sessionmaker = state.sessionmaker
        self.verifier = state.verifier
        self.revocations = state.revocations
        self.clock = state.clock
        self.state = state

    async def default_account(self) -> BaseUser:
        async with session_scope(self.sessionmaker) as session:
            account = await session.get(Account, self.state.default_account_id)
        if account is None:
            return RefusedCaller("Default account is not initialized.")
        return AccountCaller(account=account, subject=f"account:{account.id}")

    async def from_api_key(self, raw: str) -> BaseUser:
        refused = RefusedCaller("Invalid API key.")
        decoded = decode_api_key(raw)
        if decoded is None:
            return refused
        key_id, secret = decoded
        async with session_scope(self.sessionmaker) as session:
            key = await session.get(ApiKey, key_id)
            account = await session.get(Account, key.owner_id) if key is not None else None
        if key is None or account is None or not key.active or not account.active:
            return refused
        if not matches(key.key_hash, secret) and not self._previous_matches(key, secret):
            return refused
        await self._touch(key)
        return AccountCaller(account=account, subject=f"account:{account.id}", api_key_id=key.id)

    def _previous_matches(self, key: ApiKey, secret: str) -> bool:
        """The secret before the last rotation, within its retain window."""
        if key.previous_key_hash is None or key.last_rotated is None:
            return False
        window = dt.timedelta(minutes=key.retain_period_minutes)
        if self.clock() - aware_utc(key.last_rotated) >= window:
            return False
        return matches(key.previous_key_hash, secret)

    async def _touch(self, key: ApiKey) -> None:
        """Record ``last_used`` at most once per interval per key (a Redis gate, so a
        busy key does not write on every request)."""
        interval = self.settings.api_key_last_used_interval
        now = self.clock()
        if key.last_used is not None and now - aware_utc(key.last_used) < interval:
            return
        gate = self.state.keys("api-key-used", key.id)
        try:
            first = await self.state.redis.set(
                gate, b"1", nx=True, px=max(1, int(interval.total_seconds() * 1000))
            )
        except (RedisError, OSError):
            logger.warning("could not record an API key's last use", exc_info=True)
            return
        if not first:
            return
        async with session_scope(self.sessionmaker) as session:
            await session.exec(update(ApiKey).where(col(ApiKey.id) == key.id).values(last_used=now))

    async def from_token(self, raw: str, *, kinds: tuple[AgentTokenKind, ...]) -> BaseUser:
        try:
            token = await self.verifier.verify(raw, kinds=kinds)
        except InvalidToken as exc:
            TOKEN_VERIFICATIONS.labels(exc.outcome).inc()
            return RefusedCaller("Invalid bearer credential.")
        if await self.revocations.is_revoked(token):
            TOKEN_VERIFICATIONS.labels("revoked").inc()
            return RefusedCaller("Invalid session token.")
        if token.kind == AgentTokenKind.SESSION:
            account_id = _subject_id(token, "account")
        else:
            account_id = _uuid(token.claims.get("account_id"))
        if account_id is None:
            TOKEN_VERIFICATIONS.labels("invalid").inc()
            return RefusedCaller("Invalid session token: the subject claim is missing.")
        caller = await self._caller(token, account_id)
        # A token its account, key, device, worker or task no longer backs is revoked.
        TOKEN_VERIFICATIONS.labels("accepted" if caller.is_authenticated else "revoked").inc()
        return caller

    async def _caller(self, token: VerifiedToken, account_id: uuid.UUID) -> BaseUser:
        """Who ``token`` (signed, unexpired, not on the revocation list) speaks for, if its
        account and whatever else it names still back it."""
        claims = token.claims
        async with session_scope(self.sessionmaker) as session:
            account = await session.get(Account, account_id)
            if account is None or not _valid_for(account, token):
                return RefusedCaller("Invalid bearer credential.")
            key_id = _uuid(claims.get("api_key_id")) if "api_key_id" in claims else None
            if "api_key_id" in claims:
                key = await session.get(ApiKey, key_id) if key_id is not None else None
                if key is None or not key.active:
                    return RefusedCaller("Invalid bearer credential.")
            if token.kind == AgentTokenKind.SESSION:
                if "device_id" in claims and not await self._device_backs(token, account):
                    return RefusedCaller("Invalid bearer credential.")
                return AccountCaller(
                    account=account, subject=token.subject, token=token, api_key_id=key_id
                )
            if token.kind == AgentTokenKind.WORKER:
                return await self._worker(session, account, token)
            return await self._task(session, account, token)

    async def _device_backs(self, token: VerifiedToken, account: Account) -> bool:
        """A session obtained with the device flow lives only as long as its device is
        active, unlocked, unexpired and still the account's; its ``last_login`` is kept
        (at most one write per minute)."""
        device_id = token_device_id(token)
        now = self.clock()
        async with session_scope(self.sessionmaker) as session:
            device = await session.get(Device, device_id) if device_id is not None else None
        if device is None or not device.backs_sessions_of(account.id, now):
            return False
        if device.last_login is None or now - aware_utc(device.last_login) >= DEVICE_LOGIN_INTERVAL:
            async with session_scope(self.sessionmaker) as session:
                await session.exec(
                    update(Device).where(col(Device.id) == device.id).values(last_login=now)
                )
        return True

    async def _worker(self, session: Any, account: Account, token: VerifiedToken) -> BaseUser:
        worker_id = _subject_id(token, "worker")
        worker = await session.get(Worker, worker_id) if worker_id is not None else None
        if worker is None or worker.owner_id != account.id:
            return RefusedCaller("Invalid bearer credential.")
        return WorkerCaller(
            account=account, subject=token.subject, token=token, worker_id=worker.id
        )

    async def _task(self, session: Any, account: Account, token: VerifiedToken) -> BaseUser:
        task_id = _subject_id(token, "task")
        task = await session.get(Task, task_id) if task_id is not None else None
        attempt = token.claims.get("attempt")
        # Fencing: only the current attempt's token works.
        if task is None or task.owner_id != account.id or attempt != task.attempt:
            return RefusedCaller("Invalid bearer credential.")
        grants: Mapping[str, Any] = token.claims.get("grants") or {}
        return TaskCaller(
            account=account,
            subject=token.subject,
            token=token,
            task_id=task.id,
            attempt=task.attempt,
            worker_id=_uuid(token.claims.get("worker_id")),
            sessions=frozenset(_uuids(grants.get("session"))),
            blobs=frozenset(_uuids(grants.get("blob"))),
        )


def token_device_id(token: VerifiedToken) -> uuid.UUID | None:
    """The device a session token was obtained with (the device flow), if any."""
    return _uuid(token.claims.get("device_id")) if "device_id" in token.claims else None


def _uuids(values: Any) -> list[uuid.UUID]:
    if not isinstance(values, list):
        return []
    return [u for u in (_uuid(v) for v in values) if u is not None]


def _valid_for(account: Account, token: VerifiedToken) -> bool:
    if not account.active:
        return False
    cutoff = account.tokens_valid_after
    if cutoff is None or token.issued_at > aware_utc(cutoff):
        return True
    return account.tokens_kept_jti is not None and token.jti == account.tokens_kept_jti


def ensure_admin(caller: AccountCaller, permission: str) -> None:
    """403 ``Insufficient permissions for <permission>`` unless the caller is an admin."""
    if not caller.account.is_admin:
        raise Forbidden(f"Insufficient permissions for {permission}")
