"""Reaching a Kubernetes API server a connector names, to verify the connector: one
``GET /version`` with its credentials, through the egress proxy.

The server is the user's address, so the request goes through
:class:`~tracking.store.egress.EgressProxy` (the artifact stores' proxy, with its address
policy): a loopback, private, link-local or metadata address is refused there, after the
proxy resolved the name itself. A plain ``http://`` server is refused outright: the
proxy forwards plain HTTP, but a token must not travel in clear. Every failure (refused,
unreachable, TLS, credentials, not Kubernetes) answers the user the same sentence, so the
answers do not map the server's network; the cause goes to the log.

The HTTP client is made per verification, not in the lifespan: its TLS settings (the
connector's CA, client certificate, ``insecure``) are the connector's.
"""

from __future__ import annotations

import base64
import binascii
import logging
import ssl
import tempfile
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit

import httpx

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ClusterAccess:
    """What a Kubernetes connector's configuration says about reaching its cluster."""

    server: str
    token: str | None = None
    username: str | None = None
    password: str | None = None
    certificate_authority: str | None = None  # base64 PEM
    client_certificate: str | None = None  # base64 PEM
    client_key: str | None = None  # base64 PEM
    insecure: bool = False


class ProbeFailed(Exception):
    """The cluster could not be verified (the reason is for the log)."""


def _pem(value: str, what: str) -> bytes:
    try:
        return base64.b64decode(value.encode(), validate=False)
    except (binascii.Error, ValueError) as exc:
        raise ProbeFailed(f"the {what} is not base64") from exc


def _tls(access: ClusterAccess) -> ssl.SSLContext:
    context = ssl.create_default_context()
    try:
        if access.certificate_authority:
            context.load_verify_locations(
                cadata=_pem(access.certificate_authority, "CA certificate").decode()
            )
        if access.insecure:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        if access.client_certificate and access.client_key:
            with tempfile.TemporaryDirectory() as folder:
                cert, key = Path(folder, "cert.pem"), Path(folder, "key.pem")
                cert.write_bytes(_pem(access.client_certificate, "client certificate"))
                key.write_bytes(_pem(access.client_key, "client key"))
                context.load_cert_chain(cert, key)
    except (ssl.SSLError, UnicodeDecodeError, ValueError) as exc:
        raise ProbeFailed(f"unusable TLS material: {exc}") from exc
    return context


class ClusterProbe:
    """``GET {server}/version`` as the connector, through ``proxy_url`` (the egress
    proxy); ``transport`` replaces the network (tests)."""

    def __init__(
        self,
        proxy_url: str,
        timeout: timedelta,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.proxy_url = proxy_url
        self.timeout = timeout.total_seconds()
        self.transport = transport

    def _client(self, access: ClusterAccess) -> httpx.AsyncClient:
        if self.transport is not None:
            return httpx.AsyncClient(transport=self.transport, timeout=self.timeout)
        transport = httpx.AsyncHTTPTransport(proxy=self.proxy_url, verify=_tls(access), retries=0)
        return httpx.AsyncClient(transport=transport, timeout=self.timeout, trust_env=False)

    async def version(self, access: ClusterAccess) -> str:
        """The cluster's version (``gitVersion``); :class:`ProbeFailed` otherwise."""
        parts = urlsplit(access.server)
        if parts.scheme != "https" or not parts.hostname:
            raise ProbeFailed("the server is not an https URL")
        if parts.username is not None or parts.password is not None:
            raise ProbeFailed("the server URL holds credentials")
        headers = {"Accept": "application/json"}
        auth = None
        if access.token:
            headers["Authorization"] = f"Bearer {access.token}"
        elif access.username is not None and access.password is not None:
            auth = httpx.BasicAuth(access.username, access.password)
        url = access.server.rstrip("/") + "/version"
        try:
            async with self._client(access) as client:
                response = await client.get(url, headers=headers, auth=auth)
        except httpx.HTTPError as exc:
            raise ProbeFailed(f"{parts.hostname}: {type(exc).__name__}: {exc}") from exc
        if response.status_code != 200:
            raise ProbeFailed(f"{parts.hostname} answered {response.status_code}")
        try:
            found = response.json().get("gitVersion")
        except (ValueError, AttributeError):
            found = None
        if not isinstance(found, str):
            raise ProbeFailed(f"{parts.hostname} is not a Kubernetes API server")
        return found


async def verify_cluster(probe: ClusterProbe, access: ClusterAccess) -> str | None:
    """``None`` when the cluster answered as the connector; else the one sentence the
    user gets (the cause is logged)."""
    try:
        await probe.version(access)
    except ProbeFailed as exc:
        log.warning("kubernetes connector verification failed: %s", exc)
        return (
            "failed to verify Kubernetes cluster access: the server could not reach the "
            "Kubernetes API server with these credentials."
        )
    return None
