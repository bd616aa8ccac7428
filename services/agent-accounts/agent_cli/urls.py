"""Server URLs: one normal form (the key of stored credentials), and the read-only
client's stricter rule (HTTPS, or cleartext HTTP on a loopback address only)."""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import urlsplit, urlunsplit

# Encoded dots, slashes and backslashes would let a path mean something else after
# decoding; the read-only client refuses them outright.
_ENCODED = re.compile(r"%(2e|2f|5c)", re.IGNORECASE)


class UrlError(ValueError):
    """A server URL the tools will not use; the message says why."""


def normalize_server_url(raw: str) -> str:
    """``scheme://host[:port][/path]`` with trailing slashes stripped; only http and
    https, with a host, and without credentials, query or fragment."""
    text = raw.strip()
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise UrlError(f"{raw!r} is not a valid URL: {exc}") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise UrlError(f"{raw!r} is not an http:// or https:// URL")
    if not parts.hostname:
        raise UrlError(f"{raw!r} has no host")
    if parts.username is not None or parts.password is not None:
        raise UrlError("a server URL may not carry a user name or password")
    if parts.query or parts.fragment or text.endswith(("?", "#")):
        raise UrlError("a server URL may not carry a query or a fragment")
    host = parts.hostname
    netloc = f"[{host}]" if ":" in host else host
    if port is not None:
        netloc += f":{port}"
    return urlunsplit((scheme, netloc, parts.path.rstrip("/"), "", ""))


def is_loopback(host: str) -> bool:
    """``localhost``, ``::1`` or a dotted IPv4 address in 127.0.0.0/8."""
    if host.lower() == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback


def read_only_url(raw: str) -> str:
    """The normal form of ``raw`` if the read-only client may talk to it: HTTPS, or HTTP
    on a loopback address; no backslashes, encoded ``.``/``/``/``\\`` or dot segments."""
    if "\\" in raw:
        raise UrlError("a server URL may not contain a backslash")
    if _ENCODED.search(raw):
        raise UrlError("a server URL may not contain an encoded '.', '/' or '\\'")
    url = normalize_server_url(raw)
    parts = urlsplit(url)
    if any(segment in (".", "..") for segment in parts.path.split("/")):
        raise UrlError("a server URL may not contain '.' or '..' path segments")
    if parts.scheme == "http" and not is_loopback(parts.hostname or ""):
        raise UrlError(
            f"refusing cleartext HTTP to {parts.hostname}: use https://, or http:// only "
            "on localhost, 127.0.0.0/8 or ::1"
        )
    return url
