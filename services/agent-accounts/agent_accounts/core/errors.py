"""Errors of the agent-run API that are not plain ``{"detail": str}`` ones."""

from __future__ import annotations

from typing import Any

from shared.errors import PlatformError


class TokenError(PlatformError):
    """A grant error: 400 ``{"error", "detail"}`` (kitaru's TokenErrorResponse)."""

    status_code = 400

    def __init__(self, error: str, detail: str) -> None:
        super().__init__(detail)
        self.error = error

    def body(self) -> Any:
        return {"error": self.error, "detail": self.message}


class NotServed(PlatformError):
    """A kitaru route this server does not serve: 501, worded as the gateway words the
    route families it answers for itself."""

    status_code = 501

    def __init__(self, route: str) -> None:
        super().__init__(f"{route} is not implemented by this server.")
