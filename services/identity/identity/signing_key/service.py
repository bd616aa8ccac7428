"""Signing keys: creation, rotation, encryption at rest, and the in-process key ring.

Rotating publishes a new key at once and lets it sign after
``signing_key_activation_delay``, so that every verifier can fetch it before it meets a
token it signed. The key it replaces stays in the JWKS (and keeps verifying the tokens it
signed) for ``signing_key_retention`` after that, then leaves the set.
Several identity replicas share the keys through the database; each replica's
:class:`KeyRing` re-reads them every few seconds and at once on an unknown ``kid``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from contextlib import suppress
from typing import Any

import jwt
from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from sqlmodel.ext.asyncio.session import AsyncSession

from identity.models import SigningKey
from identity.settings import Settings
from identity.signing_key.repository import SigningKeyRepository
from shared.auth import (
    StaticKeySource,
    TokenSigner,
    generate_signing_key,
    new_kid,
    private_key_from_pem,
    private_key_to_pem,
    public_jwk,
)
from shared.db import Clock, SessionMaker, session_scope, utcnow

logger = logging.getLogger(__name__)


def fernet_for(settings: Settings) -> MultiFernet:
    return MultiFernet([Fernet(key) for key in settings.fernet_keys()])


def _undecryptable(key: SigningKey) -> RuntimeError:
    return RuntimeError(
        f"signing key {key.kid} cannot be decrypted with SIGNING_KEY_ENCRYPTION_KEYS"
    )


class SigningKeyService:
    def __init__(self, session: AsyncSession, settings: Settings, clock: Clock = utcnow) -> None:
        self.settings = settings
        self.repository = SigningKeyRepository(session)
        self.fernet = fernet_for(settings)
        self.first = Fernet(settings.fernet_keys()[0])
        self.clock = clock

    async def rotate(self, *, immediate: bool = False) -> SigningKey:
        """Create a new signing key; the current one is superseded when it activates.

        ``immediate`` skips the publication delay: only for the very first key, which no
        verifier can be waiting for.
        """
        now = self.clock()
        activates_at = now if immediate else now + self.settings.signing_key_activation_delay
        current = await self.repository.newest()
        if current is not None and current.superseded_at is None:
            current.superseded_at = activates_at
            current.expires_at = activates_at + self.settings.signing_key_retention
            self.repository.add(current)
        private_key = generate_signing_key()
        kid = new_kid()
        key = SigningKey(
            kid=kid,
            private_key_encrypted=self.fernet.encrypt(private_key_to_pem(private_key)),
            public_jwk=json.dumps(public_jwk(private_key, kid)),
            created=now,
            activates_at=activates_at,
        )
        self.repository.add(key)
        await self.repository.session.flush()
        return key

    async def ensure_current(self) -> SigningKey:
        """The key that signs now; the first key is made at once, and a rotation is
        started (published, activating later) when the newest key is too old."""
        now = self.clock()
        newest = await self.repository.newest()
        if newest is None:
            return await self.rotate(immediate=True)
        if now - newest.created >= self.settings.signing_key_rotation_interval:
            await self.rotate()
        signing = await self.repository.signing(now)
        assert signing is not None  # the first key activates immediately
        return signing

    async def reencrypt(self) -> int:
        """Re-encrypt the private keys not under the first Fernet key (after a key change);
        how many. A key already under it is left alone (rotating would rewrite it anyway)."""
        changed = 0
        for key in await self.repository.all():
            with suppress(InvalidToken):
                self.first.decrypt(key.private_key_encrypted)
                continue
            try:
                key.private_key_encrypted = self.fernet.rotate(key.private_key_encrypted)
            except InvalidToken:
                raise _undecryptable(key) from None
            self.repository.add(key)
            changed += 1
        return changed

    def signer(self, key: SigningKey) -> TokenSigner:
        try:
            pem = self.fernet.decrypt(key.private_key_encrypted)
        except InvalidToken:
            raise _undecryptable(key) from None
        return TokenSigner(private_key_from_pem(pem), kid=key.kid, issuer=self.settings.jwt_issuer)


class KeyRing:
    """This process's view of the signing keys: the current signer and the JWKS.

    It is also the identity service's own :class:`~shared.auth.KeySource`, so identity
    verifies tokens without calling itself over HTTP. The keys are re-read by a background
    task every ``signing_key_refresh_interval`` (see :meth:`run`), never inside a request,
    which would open a second transaction under the request's own. An unknown ``kid`` is
    looked up at once, from the authentication middleware, which runs before any
    transaction. Which keys sign and verify is decided on ``clock``; how often they are
    re-read, on real time.
    """

    UNKNOWN_KID_INTERVAL = 1.0

    def __init__(self, sessionmaker: SessionMaker, settings: Settings, clock: Clock) -> None:
        self._sessionmaker = sessionmaker
        self._settings = settings
        self._clock = clock
        self._source = StaticKeySource({"keys": []})
        self._signer: TokenSigner | None = None
        self._jwks: dict[str, Any] = {"keys": []}
        self._loaded_at = float("-inf")
        self._lock = asyncio.Lock()

    async def load(self) -> None:
        """Re-read the keys from the database (rotating first if the newest is too old)."""
        async with self._lock, session_scope(self._sessionmaker) as session:
            service = SigningKeyService(session, self._settings, self._clock)
            current = await service.ensure_current()
            keys = await service.repository.verifying(self._clock())
            self._signer = service.signer(current)
            self._jwks = {"keys": [json.loads(k.public_jwk) for k in keys]}
            self._source.set_jwks(self._jwks)
            self._loaded_at = time.monotonic()

    async def run(self) -> None:
        """Refresh forever (the lifespan runs this as a task and cancels it)."""
        while True:
            await asyncio.sleep(self._settings.signing_key_refresh_interval.total_seconds())
            try:
                await self.load()
            except Exception:
                logger.exception("could not refresh the signing keys; keeping the current ones")

    async def signer(self) -> TokenSigner:
        if self._signer is None:
            raise RuntimeError("the key ring has not been loaded")
        return self._signer

    async def jwks(self) -> dict[str, Any]:
        return self._jwks

    async def get(self, kid: str) -> jwt.PyJWK | None:
        key = await self._source.get(kid)
        if key is None and time.monotonic() - self._loaded_at >= self.UNKNOWN_KID_INTERVAL:
            await self.load()
            key = await self._source.get(kid)
        return key
