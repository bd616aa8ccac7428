"""The environment each process of the local stack is started with.

Children do not inherit the launcher's whole environment: a ``DATABASE_URL`` or
``REDIS_URL`` left in a developer's shell must not point a local service at another
database, and a passthrough secret (``DEFAULT_ADMIN_PASSWORD``) must reach only the
service that asked for it. They get the few variables a process needs to run, then
(later wins) the stack's ``[environment]``, the computed settings, the service's own
``env`` and its ``passthrough`` variables, all with the service's ``env_prefix``.

A service's ``DATABASE_URL`` is therefore chosen only by the launcher's own settings:
``<SERVICE>_DATABASE_URL`` (one service's database), ``--database-url`` (a server), or
the embedded PostgreSQL (:func:`database_url`).
"""

from __future__ import annotations

import functools
import json
import socket
from collections.abc import Mapping, Sequence
from pathlib import Path

from deploy.config import Service, Stack
from deploy.gateway.render import LOCAL_SOURCE_ADDRESS
from deploy.local import postgres
from deploy.local.options import Options
from deploy.local.secrets import StackSecrets

# What a Python process and its libraries need from the outside world, nothing more.
SYSTEM_VARIABLES = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "TMPDIR",
    "TERM",
    "NO_COLOR",
    "PYTHONPATH",
    "VIRTUAL_ENV",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
)


def database_name(owner: str) -> str:
    """The database of one web service (and of its workers), as docker-compose names it."""
    return owner.replace("-", "_")


def own_database_variable(owner: str) -> str:
    """The launcher's variable that gives one web service a database of its own."""
    return f"{owner.upper().replace('-', '_')}_DATABASE_URL"


def database_url(options: Options, owner: str, launcher_environ: Mapping[str, str]) -> str:
    """Where one web service's database is (its workers share it), with the services'
    driver: its own (``TRACKING_DATABASE_URL``), else its database on ``--database-url``'s
    server, else on the embedded server."""
    own = launcher_environ.get(own_database_variable(owner))
    if own:
        return postgres.with_database(own, postgres.database_of(own), driver=postgres.DRIVER)
    server = options.database_url or postgres.server_url(options.ports.postgres)
    return postgres.with_database(server, database_name(owner), driver=postgres.DRIVER)


def embedded_postgres(options: Options, launcher_environ: Mapping[str, str]) -> bool:
    """Whether the stack runs the embedded PostgreSQL: no server was named, and some web
    service has no database of its own."""
    return options.database_url is None and any(
        not launcher_environ.get(own_database_variable(s.name)) for s in options.stack.web_services
    )


def pgdata(options: Options) -> Path:
    """The embedded server's data directory: ``postgres/`` in the data dir, or, when root
    starts it and its user cannot get through to the data dir, the one
    :func:`~deploy.local.postgres.cluster_directory` names."""
    return postgres.cluster_directory(options.data_dir / "postgres")


def service_url(options: Options, name: str) -> str:
    """Base URL of a web service's own process (not through the gateway)."""
    return f"http://127.0.0.1:{options.ports.services[name]}"


@functools.cache
def gateway_source_address() -> str | None:
    """The loopback address the gateway connects to the services from, and the only peer
    they believe ``X-Forwarded-For`` from, if this machine has it (Linux has all of
    127.0.0.0/8; macOS only 127.0.0.1 unless an alias is added). Without it the services
    believe no one: every client is the gateway's 127.0.0.1 to them."""
    with socket.socket() as probe:
        try:
            probe.bind((LOCAL_SOURCE_ADDRESS, 0))
        except OSError:
            return None
    return LOCAL_SOURCE_ADDRESS


def redis_url(options: Options) -> str:
    return f"redis://127.0.0.1:{options.ports.valkey}/0"


def connect_host(listen: str) -> str:
    """Where to reach a listener bound to ``listen`` from this machine."""
    return {"0.0.0.0": "127.0.0.1", "::": "::1", "[::]": "::1"}.get(listen, listen)  # noqa: S104


def public_url(options: Options, entrypoint: str) -> str:
    """An entrypoint's URL at the gateway, as this machine reaches it."""
    host = connect_host(options.listen)
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"http://{host}:{options.ports.entrypoints[entrypoint]}"


def passthrough_value(
    prefixes: Sequence[str], name: str, launcher_environ: Mapping[str, str]
) -> str | None:
    """A passthrough variable as the launcher's environment gives it: under the first of
    the service's ``prefixes`` that is set (its ``env_prefix``, the name its own
    documentation uses, then its ``env_aliases``) or, failing those, unprefixed."""
    for key in (*(f"{prefix}{name}" for prefix in prefixes), name):
        if key in launcher_environ:
            return launcher_environ[key]
    return None


def metrics_environment(options: Options, service: Service, process: str) -> dict[str, str]:
    """``METRICS_PORT`` (with the service's prefix) of one replica's process, if it serves
    metrics: each replica has a port of its own."""
    port = options.ports.metrics.get(process)
    if port is None:
        return {}
    prefix = service.env_prefix or options.stack.service(service.owner).env_prefix
    return {f"{prefix}METRICS_PORT": str(port)}


def service_environment(
    options: Options,
    service: Service,
    secrets: StackSecrets,
    launcher_environ: Mapping[str, str],
) -> dict[str, str]:
    """The complete environment for ``service`` (a web service or a worker)."""
    stack = options.stack
    owner = stack.service(service.owner)
    issuer_url = service_url(options, stack.issuer.name)
    prefix = service.env_prefix or owner.env_prefix
    settings = dict(stack.environment)
    settings |= {
        "DATABASE_URL": database_url(options, owner.name, launcher_environ),
        "REDIS_URL": redis_url(options),
        "SERVER_ID": secrets.server_id,
        "IDENTITY_URL": issuer_url,
        "JWKS_URL": f"{issuer_url}/.well-known/jwks.json",
        "LOG_JSON": "true" if options.log_json else settings.get("LOG_JSON", "false"),
        "FORWARDED_ALLOW_IPS": gateway_source_address() or "",
    }
    # Where each web service of this stack listens (TRACKING_URL …), so services that call
    # one another follow --port-offset.
    settings |= {
        f"{web.name.upper().replace('-', '_')}_URL": service_url(options, web.name)
        for web in stack.web_services
        if not web.issuer
    }
    if owner.issuer:
        settings["SERVICE_CLIENTS"] = json.dumps(secrets.clients, sort_keys=True)
        # Where users reach the platform's API and dashboard (its entrypoint at the gateway,
        # filled in below): identity's /info tells clients.
        settings["SERVER_URL"] = "{public_url}"
    else:
        settings["SERVICE_CLIENT_ID"] = owner.name
        settings["SERVICE_CLIENT_SECRET"] = secrets.clients[owner.name]
    settings |= secrets.generated.get(owner.name, {})
    for source in _sources(stack, service):
        settings |= source.env
        for name in source.passthrough:
            value = passthrough_value((prefix, *owner.env_aliases), name, launcher_environ)
            if value is not None:
                settings[name] = value
    # Values in stack.toml may name the stack's data folder and the service's public URL.
    places = {"{data_dir}": str(options.data_dir)}
    if owner.entrypoint is not None:
        places["{public_url}"] = public_url(options, owner.entrypoint)
    for place, value in places.items():
        settings = {k: v.replace(place, value) for k, v in settings.items()}
    env = {k: v for k, v in launcher_environ.items() if k in SYSTEM_VARIABLES}
    # OpenTelemetry's own variables, unprefixed as its SDK reads them (tracing is on when
    # one names a collector), except the service name: each process names itself.
    env |= {
        k: v
        for k, v in launcher_environ.items()
        if k.startswith("OTEL_") and k != "OTEL_SERVICE_NAME"
    }
    env["PYTHONUNBUFFERED"] = "1"  # lines reach the terminal as they are written
    return env | {f"{prefix}{name}": value for name, value in settings.items()}


def _sources(stack: Stack, service: Service) -> list[Service]:
    """A worker runs with its owner's settings, then its own on top."""
    if service.owner == service.name:
        return [service]
    return [stack.service(service.owner), service]
