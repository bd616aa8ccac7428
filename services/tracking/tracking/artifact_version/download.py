"""Download tokens: short-lived, bound to one artifact version's data or one snapshot's
code, read only by tracking.

As the reference: an HS256 JWT with ``exp``, ``download_type`` and ``resource_id``, and
nothing that names a user, so the data URL can be handed to a browser or a tool.
"""

from __future__ import annotations

import datetime as dt
import secrets
import uuid
from dataclasses import dataclass

import jwt

from shared.auth import InvalidToken, compact_segments
from shared.errors import Unauthorized

ALGORITHM = "HS256"
ARTIFACT_VERSION = "artifact_version"
SNAPSHOT_CODE = "snapshot_code"
_WHAT = {ARTIFACT_VERSION: "an artifact version", SNAPSHOT_CODE: "a snapshot code"}


@dataclass(frozen=True)
class DownloadTokens:
    secret: str
    lifetime: dt.timedelta

    @classmethod
    def create(cls, secret: str | None, lifetime: dt.timedelta) -> DownloadTokens:
        return cls(secret or secrets.token_urlsafe(32), lifetime)

    def issue(self, resource_id: uuid.UUID, kind: str = ARTIFACT_VERSION) -> str:
        claims = {
            "exp": dt.datetime.now(dt.UTC) + self.lifetime,
            "download_type": kind,
            "resource_id": str(resource_id),
        }
        return jwt.encode(claims, self.secret, algorithm=ALGORITHM)

    def check(self, token: str, resource_id: uuid.UUID, kind: str = ARTIFACT_VERSION) -> None:
        """401 unless ``token`` is valid, unexpired and for this download (``kind``) of
        this resource."""
        try:
            # PyJWT alone would take '=' padding; only the canonical spelling is a token.
            compact_segments(token)
        except InvalidToken as exc:
            raise Unauthorized(f"Invalid JWT token: {exc.message}") from None
        try:
            claims = jwt.decode(
                token, self.secret, algorithms=[ALGORITHM], options={"require": ["exp"]}
            )
        except jwt.PyJWTError as exc:
            raise Unauthorized(f"Invalid JWT token: {exc}") from None
        if claims.get("download_type") != kind:
            raise Unauthorized(f"Invalid JWT token: not {_WHAT[kind]} download token")
        if claims.get("resource_id") != str(resource_id):
            raise Unauthorized("Invalid resource ID")
