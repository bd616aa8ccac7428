"""What identity's request models share: the reference's rule for names (users, service
accounts, API keys, the server's name)."""

from __future__ import annotations

from typing import Any

# valid_name's rule for the OpenAPI documents: no tab or line break, and a character that
# str.strip() keeps (\s and the separators \x1c-\x1f, which Python strips too).
NAME_SCHEMA: dict[str, Any] = {"pattern": r"^[^\t\n\r\v\f]*[^\s\x1c-\x1f][^\t\n\r\v\f]*$"}


def valid_name(value: str | None) -> str | None:
    if value is not None and (not value.strip() or any(c in value for c in "\t\n\r\v\f")):
        raise ValueError("the name must be non-empty and contain no tabs or line breaks")
    return value
