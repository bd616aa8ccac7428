"""What identity's request models share: the reference's rule for names (users, service
accounts, API keys, the server's name)."""

from __future__ import annotations


def valid_name(value: str | None) -> str | None:
    if value is not None and (not value.strip() or any(c in value for c in "\t\n\r\v\f")):
        raise ValueError("the name must be non-empty and contain no tabs or line breaks")
    return value
