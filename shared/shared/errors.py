"""The platform's error tree and its wire shapes.

::

    PlatformError                      500  RuntimeError
    ├── BadRequest                     400  ValueError
    ├── Unauthorized                   401  CredentialsNotValid   (+ WWW-Authenticate)
    │   └── AuthorizationFailed        401  AuthorizationException
    ├── Forbidden                      403  IllegalOperationError
    ├── NotFound                       404  KeyError
    │   └── DoesNotExist               404  DoesNotExistException
    ├── MethodNotAllowed               405  MethodNotAllowedError
    ├── Conflict                       409  EntityExistsError
    ├── PayloadTooLarge                413  PayloadTooLarge
    ├── UnsupportedMediaType           415  UnsupportedMediaType
    ├── Unprocessable                  422  ValueError            (filter-model validation)
    ├── RequestValidationFailed        422  list of {loc, msg, type} (request validation)
    ├── TooManyRequests                429  TooManyRequests       (+ Retry-After)
    ├── ServiceUnavailable             503  ServiceUnavailable
    ├── HTTPDetailError                any  {"detail": "<string>"} (the reference's HTTPException)
    └── OAuthError                     400  {"error", "error_description", "error_uri"} (RFC 6749)

Every error renders as ``{"detail": [<wire name>, <message>]}`` (the reference's shape,
which the ``zenml`` client maps back to its exception classes), except request validation,
which renders as the documented ``HTTPValidationError`` ``{"detail": [{loc, msg, type}]}``,
and :class:`HTTPDetailError`, which renders ``{"detail": "<string>"}``, and
:class:`OAuthError`, the token endpoint's RFC 6749 / RFC 8628 body. Domain errors
subclass these next to their service and only set a message.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from pydantic import ValidationError

__all__ = [
    "NO_SUCH_ENDPOINT",
    "AuthorizationFailed",
    "BadRequest",
    "Conflict",
    "DoesNotExist",
    "Forbidden",
    "HTTPDetailError",
    "NotFound",
    "OAuthError",
    "PayloadTooLarge",
    "PlatformError",
    "RequestValidationFailed",
    "ServiceUnavailable",
    "Unauthorized",
    "Unprocessable",
]


class PlatformError(Exception):
    """Base of every error a handler may raise on purpose."""

    status_code: ClassVar[int] = 500
    wire_name: ClassVar[str] = "RuntimeError"
    default_headers: ClassVar[Mapping[str, str]] = {}

    def __init__(self, message: str = "", *, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.headers: dict[str, str] = {**self.default_headers, **(headers or {})}

    def detail(self) -> Any:
        """The value of the ``detail`` key in the response body."""
        return [self.wire_name, self.message]

    def body(self) -> Any:
        """The whole JSON response body."""
        return {"detail": self.detail()}


class BadRequest(PlatformError):
    status_code = 400
    wire_name = "ValueError"


class Unauthorized(PlatformError):
    status_code = 401
    wire_name = "CredentialsNotValid"
    default_headers = {"WWW-Authenticate": "Bearer"}


class AuthorizationFailed(Unauthorized):
    """The caller is authenticated, but its token may not do this (the reference's 401)."""

    wire_name = "AuthorizationException"


class Forbidden(PlatformError):
    status_code = 403
    wire_name = "IllegalOperationError"


class NotFound(PlatformError):
    status_code = 404
    wire_name = "KeyError"


NO_SUCH_ENDPOINT = "No endpoint of this server has this path."
"""The message of a platform-style 404 for a path nothing routes (a service's or the
gateway's); the reference answers ``{"detail": "Not Found"}``, which the ``zenml`` client
shows as ``KeyError: 'Not Found'``."""


class DoesNotExist(NotFound):
    wire_name = "DoesNotExistException"


class MethodNotAllowed(PlatformError):
    status_code = 405
    wire_name = "MethodNotAllowedError"


class Conflict(PlatformError):
    status_code = 409
    wire_name = "EntityExistsError"


class PayloadTooLarge(PlatformError):
    status_code = 413
    wire_name = "PayloadTooLarge"


class UnsupportedMediaType(PlatformError):
    status_code = 415
    wire_name = "UnsupportedMediaType"


class Unprocessable(PlatformError):
    status_code = 422
    wire_name = "ValueError"


class TooManyRequests(PlatformError):
    status_code = 429
    wire_name = "TooManyRequests"

    def __init__(self, message: str, *, retry_after: int) -> None:
        super().__init__(message, headers={"Retry-After": str(max(1, retry_after))})


class ServiceUnavailable(PlatformError):
    status_code = 503
    wire_name = "ServiceUnavailable"


class HTTPDetailError(PlatformError):
    """An error whose body is ``{"detail": "<message>"}``, as the reference's HTTPException."""

    def __init__(
        self, status_code: int, message: str, *, headers: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(message, headers=headers)
        self.status_code = status_code  # type: ignore[misc]

    def detail(self) -> Any:
        return self.message


class RequestValidationFailed(PlatformError):
    """The request's path, query, form or body did not validate (422)."""

    status_code = 422
    wire_name = "RequestValidationError"

    def __init__(self, errors: Sequence[Mapping[str, Any]]) -> None:
        self.errors = [dict(e) for e in errors]
        summary = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in self.errors)
        super().__init__(summary)

    @classmethod
    def from_pydantic(
        cls, exc: ValidationError, location: str | Sequence[str | int]
    ) -> RequestValidationFailed:
        """Convert a pydantic error, prefixing each ``loc`` with where the value came from
        (``"body"``, or a path such as ``("body", "filter")``)."""
        return cls.from_errors(exc.errors(include_url=False, include_input=False), location)

    @classmethod
    def from_errors(
        cls, errors: Sequence[Mapping[str, Any]], location: str | Sequence[str | int]
    ) -> RequestValidationFailed:
        """Pydantic's error entries (some of a :class:`ValidationError`'s), each ``loc``
        prefixed with ``location`` as :meth:`from_pydantic` does."""
        prefix = [location] if isinstance(location, str) else list(location)
        return cls(
            [
                {"loc": [*prefix, *err["loc"]], "msg": err["msg"], "type": err["type"]}
                for err in errors
            ]
        )

    @classmethod
    def single(
        cls, location: Sequence[str | int], message: str, kind: str = "value_error"
    ) -> RequestValidationFailed:
        return cls([{"loc": list(location), "msg": message, "type": kind}])

    def detail(self) -> Any:
        return self.errors


class OAuthError(PlatformError):
    """An OAuth 2.0 error (RFC 6749 §5.2, RFC 8628 §3.5) from a token endpoint."""

    status_code = 400

    def __init__(self, error: str, description: str, *, status_code: int = 400) -> None:
        super().__init__(description)
        self.error = error
        self.status_code = status_code  # type: ignore[misc]

    def body(self) -> Any:
        return {"error": self.error, "error_description": self.message, "error_uri": None}


NUL_IN_TEXT = "Text may not contain the NUL character (\\u0000)."

_NUL_STATES = frozenset({"22021", "22P05"})
"""PostgreSQL's refusals of a NUL: in text (``character_not_in_repertoire``: invalid byte
sequence 0x00) and as ``\\u0000`` in JSON (``untranslatable_character``)."""


def refused_value(exc: BaseException) -> Unprocessable | None:
    """The 422 for a value PostgreSQL refused as data (SQLSTATE class 22, "data
    exception": a NUL in text, a number out of range, text too long for its column...),
    reached through whatever checks the request's parsing made; ``None`` for any other
    error. PostgreSQL's own message names the problem, never another row's data."""
    state = getattr(getattr(exc, "orig", None), "sqlstate", None)
    if not isinstance(state, str) or not state.startswith("22"):
        return None
    if state in _NUL_STATES:
        return Unprocessable(NUL_IN_TEXT)
    message = str(getattr(exc, "orig", exc)).strip().splitlines()[0]
    return Unprocessable(f"Invalid value: {message}")
