"""The stack description (``deploy/stack.toml``) as validated, immutable data.

Both the launcher (:mod:`deploy.local`) and the gateway renderer (:mod:`deploy.gateway`)
read the stack only through :func:`load_stack`, so the route table and the process list
cannot disagree. Every problem in the file is reported as one :class:`StackConfigError`
line naming the file and the offending entry.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, TypeVar, cast

DEFAULT_STACK_FILE = Path(__file__).resolve().parent / "stack.toml"
# Valkey's fsync policies for its append-only file that the stack offers, and the default.
Appendfsync = Literal["always", "everysec"]
APPENDFSYNC: tuple[Appendfsync, ...] = ("always", "everysec")
DEFAULT_APPENDFSYNC: Appendfsync = "everysec"

Kind = Literal["web", "worker"]
SecretKind = Literal["fernet", "token"]
ErrorStyle = Literal["platform", "agent"]

_NAME = re.compile(r"^[a-z][a-z0-9-]{0,40}$")
_MODULE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]*$")
_ENV_PREFIX = re.compile(r"^[A-Z][A-Z0-9_]*_$")
# Route prefixes end up verbatim in nginx `location` lines: keep them to plain path text.
_ROUTE = re.compile(r"^/([A-Za-z0-9._~-]+(/[A-Za-z0-9._~-]+)*)?$")
_BODY_SIZE = re.compile(r"^[0-9]+[km]?$")
_SECRET_KINDS = ("fernet", "token")
# Replica k (0-based) of a web service listens at its port + k * REPLICA_PORT_STRIDE on the
# local stack (8102, 8202, 8302 for tracking); containers each have their own address.
REPLICA_PORT_STRIDE = 100
MAX_REPLICAS = 9
_ERROR_STYLES = ("platform", "agent")

T = TypeVar("T")


class StackConfigError(Exception):
    """``deploy/stack.toml`` (or a file given instead) is missing or invalid."""


@dataclass(frozen=True)
class Login:
    """An entrypoint's first account, as the launcher's banner tells how to use it."""

    service: str
    """The web service that creates the account at its first start."""
    user: str
    password_variable: str
    """Chooses the first password (one of the service's ``passthrough``); unset, the
    service prints a random one once."""
    command: str
    """How a client logs in; ``{url}`` is the entrypoint's URL."""


@dataclass(frozen=True)
class Entrypoint:
    """One public port of the gateway."""

    name: str
    title: str
    port: int
    error_style: ErrorStyle
    login: Login | None = None
    unimplemented: tuple[str, ...] = ()
    """Path prefixes of the reference's API that no service serves: 501 at the gateway."""


@dataclass(frozen=True)
class Service:
    """One process of the stack: a uvicorn web service or a worker."""

    name: str
    module: str
    kind: Kind
    port: int | None = None
    entrypoint: str | None = None
    routes: tuple[str, ...] = ()
    issuer: bool = False
    owner: str = ""
    env: Mapping[str, str] = field(default_factory=dict)
    passthrough: tuple[str, ...] = ()
    secrets: Mapping[str, SecretKind] = field(default_factory=dict)
    env_prefix: str = ""
    # Other prefixes an operator of the system it stands in for uses (kitaru's KITARU_): a
    # passthrough variable is also taken under each, after env_prefix's name.
    env_aliases: tuple[str, ...] = ()
    # (web) the gateway's body limit on this service's routes, when not the gateway's own
    client_max_body_size: str | None = None
    replicas: int = 1
    """How many processes run it (the launcher's ``--replicas`` overrides it)."""
    metrics_port: int | None = None
    """The local stack's port of its (first replica's) Prometheus metrics, if served."""

    def replica_names(self) -> tuple[str, ...]:
        """The name of each replica's process: the service's own when it runs once,
        ``tracking#1``, ``tracking#2`` … when it runs more than once."""
        if self.replicas == 1:
            return (self.name,)
        return tuple(f"{self.name}#{k}" for k in range(1, self.replicas + 1))

    def replica_ports(self, offset: int = 0) -> tuple[int, ...]:
        """(web) The local stack's port of each replica, ``offset`` added."""
        if self.port is None:
            return ()
        base = self.port + offset
        return tuple(base + k * REPLICA_PORT_STRIDE for k in range(self.replicas))

    def replica_metrics_ports(self, offset: int = 0) -> tuple[int, ...]:
        """The local stack's metrics port of each replica, ``offset`` added (spaced as
        :meth:`replica_ports`); none when it serves no metrics."""
        if self.metrics_port is None:
            return ()
        base = self.metrics_port + offset
        return tuple(base + k * REPLICA_PORT_STRIDE for k in range(self.replicas))


@dataclass(frozen=True)
class Stack:
    """The whole stack: gateway, Valkey, common environment and services."""

    listen: str
    client_max_body_size: str
    entrypoints: tuple[Entrypoint, ...]
    valkey_port: int
    valkey_appendfsync: Appendfsync  # see [valkey] in stack.toml
    postgres_port: int  # the embedded server's, see [postgres] in stack.toml
    environment: Mapping[str, str]
    services: tuple[Service, ...]

    @property
    def web_services(self) -> tuple[Service, ...]:
        return tuple(s for s in self.services if s.kind == "web")

    @property
    def issuer(self) -> Service:
        return next(s for s in self.services if s.issuer)

    def service(self, name: str) -> Service:
        """The service called ``name`` (``KeyError`` if there is none)."""
        for service in self.services:
            if service.name == name:
                return service
        raise KeyError(name)

    def entrypoint(self, name: str) -> Entrypoint:
        """The entrypoint called ``name`` (``KeyError`` if there is none)."""
        for entrypoint in self.entrypoints:
            if entrypoint.name == name:
                return entrypoint
        raise KeyError(name)

    def with_replicas(self, counts: Mapping[str, int]) -> Stack:
        """This stack with some services' replica counts replaced (validated as the file's)."""
        for name, count in counts.items():
            try:
                self.service(name)
            except KeyError:
                raise StackConfigError(f"--replicas: no service named {name!r}") from None
            _check_replicas(count, f"--replicas {name}")
        services = tuple(
            replace(s, replicas=counts[s.name]) if s.name in counts else s for s in self.services
        )
        stack = replace(self, services=services)
        _check_references(stack)
        return stack


def load_stack(path: Path = DEFAULT_STACK_FILE) -> Stack:
    """Read and validate a stack file; raise :class:`StackConfigError` on any problem."""
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise StackConfigError(f"{path}: file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise StackConfigError(f"{path}: cannot read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise StackConfigError(f"{path}: not valid TOML: {exc}") from None
    try:
        return parse_stack(raw)
    except StackConfigError as exc:
        raise StackConfigError(f"{path}: {exc}") from None


def parse_stack(raw: Mapping[str, Any]) -> Stack:
    """Validate an already-parsed stack document (the body of :func:`load_stack`)."""
    _no_unknown_keys(
        raw, {"gateway", "entrypoint", "valkey", "postgres", "environment", "service"}, "top level"
    )
    gateway = _table(raw, "gateway", "top level")
    _no_unknown_keys(gateway, {"listen", "client_max_body_size"}, "[gateway]")
    body_size = _body_size(gateway, "[gateway]", "10m")
    valkey = _table(raw, "valkey", "top level")
    _no_unknown_keys(valkey, {"port", "appendfsync"}, "[valkey]")
    postgres = _table(raw, "postgres", "top level")
    _no_unknown_keys(postgres, {"port"}, "[postgres]")
    stack = Stack(
        listen=_get(gateway, "listen", str, "[gateway]", "127.0.0.1"),
        client_max_body_size=body_size,
        entrypoints=tuple(
            _entrypoint(item, f"[[entrypoint]] #{i + 1}")
            for i, item in enumerate(_array(raw, "entrypoint"))
        ),
        valkey_port=_port(valkey, "[valkey]"),
        valkey_appendfsync=_appendfsync(valkey, "[valkey]"),
        postgres_port=_port(postgres, "[postgres]"),
        environment=_env_table(raw.get("environment", {}), "[environment]"),
        services=tuple(
            _service(item, f"[[service]] #{i + 1}") for i, item in enumerate(_array(raw, "service"))
        ),
    )
    _check_references(stack)
    return stack


def _entrypoint(raw: Mapping[str, Any], where: str) -> Entrypoint:
    _no_unknown_keys(raw, {"name", "title", "port", "error_style", "login", "unimplemented"}, where)
    name = _name(raw, where)
    where = f"entrypoint {name!r}"
    style = _get(raw, "error_style", str, where, "platform")
    if style not in _ERROR_STYLES:
        raise StackConfigError(f"{where}: error_style must be one of {', '.join(_ERROR_STYLES)}")
    unimplemented = tuple(_route(r, where) for r in _get(raw, "unimplemented", list, where, []))
    if "/" in unimplemented:
        raise StackConfigError(f"{where}: / cannot be unimplemented")
    _unique(list(unimplemented), f"{where}: unimplemented prefix")
    return Entrypoint(
        name=name,
        title=_get(raw, "title", str, where, name),
        port=_port(raw, where),
        error_style=cast(ErrorStyle, style),
        login=_login(raw["login"], f"{where} login") if "login" in raw else None,
        unimplemented=unimplemented,
    )


def _login(raw: object, where: str) -> Login:
    if not isinstance(raw, dict):
        raise StackConfigError(f"{where} must be a table")
    _no_unknown_keys(raw, {"service", "user", "password_variable", "command"}, where)
    variable = _get(raw, "password_variable", str, where)
    if not _ENV_NAME.match(variable):
        raise StackConfigError(f"{where}: password_variable {variable!r} is not a variable name")
    return Login(
        service=_get(raw, "service", str, where),
        user=_get(raw, "user", str, where),
        password_variable=variable,
        command=_get(raw, "command", str, where),
    )


_SERVICE_KEYS = {
    "name",
    "module",
    "kind",
    "port",
    "entrypoint",
    "routes",
    "issuer",
    "owner",
    "env",
    "passthrough",
    "secrets",
    "env_prefix",
    "env_aliases",
    "client_max_body_size",
    "replicas",
    "metrics_port",
}


def _service(raw: Mapping[str, Any], where: str) -> Service:
    _no_unknown_keys(raw, _SERVICE_KEYS, where)
    name = _name(raw, where)
    where = f"service {name!r}"
    module = _get(raw, "module", str, where)
    if not _MODULE.match(module):
        raise StackConfigError(f"{where}: module {module!r} is not a dotted Python module name")
    kind = _get(raw, "kind", str, where)
    if kind == "web":
        if "owner" in raw:
            raise StackConfigError(f"{where}: only workers have an owner")
        return Service(
            name=name,
            module=module,
            kind="web",
            port=_port(raw, where),
            entrypoint=_get(raw, "entrypoint", str, where),
            routes=tuple(_route(r, where) for r in _get(raw, "routes", list, where)),
            issuer=_get(raw, "issuer", bool, where, False),
            owner=name,
            client_max_body_size=_body_size(raw, where, None),
            **_extras(raw, where),
        )
    if kind == "worker":
        for key in ("port", "entrypoint", "routes", "issuer", "client_max_body_size"):
            if key in raw:
                raise StackConfigError(f"{where}: a worker has no {key}")
        return Service(
            name=name,
            module=module,
            kind="worker",
            owner=_get(raw, "owner", str, where, name),
            **_extras(raw, where),
        )
    raise StackConfigError(f"{where}: kind must be 'web' or 'worker', not {kind!r}")


def _body_size(raw: Mapping[str, Any], where: str, default: T) -> str | T:
    """An nginx size (``10m``, ``512k``, ``1048576``), or ``default`` when not given."""
    if "client_max_body_size" not in raw:
        return default
    size = _get(raw, "client_max_body_size", str, where)
    if not _BODY_SIZE.match(size):
        raise StackConfigError(f"{where}: client_max_body_size {size!r} is not like '10m'")
    return size


def _extras(raw: Mapping[str, Any], where: str) -> dict[str, Any]:
    passthrough = tuple(_get(raw, "passthrough", list, where, []))
    for name in passthrough:
        if not isinstance(name, str) or not _ENV_NAME.match(name):
            raise StackConfigError(f"{where}: passthrough entry {name!r} is not a variable name")
    secrets = _env_table(raw.get("secrets", {}), f"{where} secrets")
    for var, kind in secrets.items():
        if kind not in _SECRET_KINDS:
            raise StackConfigError(
                f"{where}: secret {var} has kind {kind!r}, not one of {', '.join(_SECRET_KINDS)}"
            )
    prefix = _get(raw, "env_prefix", str, where, "")
    if prefix and not _ENV_PREFIX.match(prefix):
        raise StackConfigError(f"{where}: env_prefix {prefix!r} must be like 'SERVICE_'")
    aliases = _get(raw, "env_aliases", list, where, [])
    for alias in aliases:
        if not isinstance(alias, str) or not _ENV_PREFIX.match(alias):
            raise StackConfigError(f"{where}: env_aliases entry {alias!r} must be like 'KITARU_'")
    replicas = _get(raw, "replicas", int, where, 1)
    _check_replicas(replicas, where)
    return {
        "replicas": replicas,
        "metrics_port": _port(raw, where, "metrics_port") if "metrics_port" in raw else None,
        "env_prefix": prefix,
        "env_aliases": tuple(aliases),
        "env": _env_table(raw.get("env", {}), f"{where} env"),
        "passthrough": passthrough,
        "secrets": cast(dict[str, SecretKind], secrets),
    }


def _check_references(stack: Stack) -> None:
    """Cross-entry rules: unique names and ports, one issuer, routes owned once."""
    _unique([e.name for e in stack.entrypoints], "entrypoint name")
    _unique([s.name for s in stack.services], "service name")
    ports = [e.port for e in stack.entrypoints] + [stack.valkey_port, stack.postgres_port]
    ports += [p for s in stack.web_services for p in s.replica_ports()]
    _unique(ports + [p for s in stack.services for p in s.replica_metrics_ports()], "port")
    if not stack.entrypoints:
        raise StackConfigError("at least one [[entrypoint]] is needed")
    issuers = [s.name for s in stack.services if s.issuer]
    if len(issuers) != 1:
        raise StackConfigError(f"exactly one service must have issuer = true, found {issuers}")
    entrypoint_names = {e.name for e in stack.entrypoints}
    web_names = {s.name for s in stack.web_services}
    for service in stack.services:
        if service.kind == "web" and service.entrypoint not in entrypoint_names:
            raise StackConfigError(
                f"service {service.name!r}: entrypoint {service.entrypoint!r} is not defined"
            )
        if service.kind == "worker" and service.owner not in web_names:
            raise StackConfigError(
                f"service {service.name!r}: owner {service.owner!r} is not a web service"
            )
    owners: dict[tuple[str | None, str], str] = {}
    for service in stack.web_services:
        for route in service.routes:
            other = owners.setdefault((service.entrypoint, route), service.name)
            if other != service.name:
                raise StackConfigError(
                    f"route {route} on entrypoint {service.entrypoint!r} is claimed by both "
                    f"{other!r} and {service.name!r}"
                )
    for entrypoint in stack.entrypoints:
        _check_entrypoint(stack, entrypoint)


def _check_replicas(count: int, where: str) -> None:
    if isinstance(count, bool) or not 1 <= count <= MAX_REPLICAS:
        raise StackConfigError(f"{where}: replicas must be a whole number from 1 to {MAX_REPLICAS}")


def _check_entrypoint(stack: Stack, entrypoint: Entrypoint) -> None:
    """Its login names a service of its own that takes the password variable; no
    unimplemented prefix overlaps a route a service serves there."""
    where = f"entrypoint {entrypoint.name!r}"
    services = [s for s in stack.web_services if s.entrypoint == entrypoint.name]
    login = entrypoint.login
    if login is not None:
        owner = next((s for s in services if s.name == login.service), None)
        if owner is None:
            raise StackConfigError(f"{where}: login service {login.service!r} is not served here")
        if login.password_variable not in owner.passthrough:
            raise StackConfigError(
                f"{where}: login password_variable {login.password_variable} is not in "
                f"{owner.name}'s passthrough"
            )
    for prefix in entrypoint.unimplemented:
        for service in services:
            for route in service.routes:
                if route != "/" and _overlaps(prefix, route):
                    raise StackConfigError(
                        f"{where}: unimplemented {prefix} overlaps {service.name}'s route {route}"
                    )


def _overlaps(a: str, b: str) -> bool:
    """Whether one path prefix is, or lies under, the other."""
    return a == b or a.startswith(f"{b}/") or b.startswith(f"{a}/")


def _unique(values: list[Any], what: str) -> None:
    seen: set[Any] = set()
    for value in values:
        if value in seen:
            raise StackConfigError(f"{what} {value!r} is used more than once")
        seen.add(value)


def _no_unknown_keys(raw: Mapping[str, Any], allowed: set[str], where: str) -> None:
    unknown = sorted(set(raw) - allowed)
    if unknown:
        raise StackConfigError(f"{where}: unknown key(s) {', '.join(unknown)}")


def _table(raw: Mapping[str, Any], key: str, where: str) -> Mapping[str, Any]:
    value = raw.get(key)
    if not isinstance(value, dict):
        raise StackConfigError(f"{where}: a [{key}] table is required")
    return value


def _array(raw: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    value = raw.get(key, [])
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise StackConfigError(f"{key} must be an array of tables ([[{key}]])")
    return value


_MISSING: Any = object()


def _get(raw: Mapping[str, Any], key: str, kind: type[T], where: str, default: T = _MISSING) -> T:
    value = raw.get(key, default)
    if value is _MISSING:
        raise StackConfigError(f"{where}: {key} is required")
    # bool is a subclass of int: a port of `true` must not pass as 1.
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise StackConfigError(f"{where}: {key} must be of type {kind.__name__}")
    return value


def _name(raw: Mapping[str, Any], where: str) -> str:
    name = _get(raw, "name", str, where)
    if not _NAME.match(name):
        raise StackConfigError(f"{where}: name {name!r} must be lower-case letters, digits, '-'")
    return name


def _port(raw: Mapping[str, Any], where: str, key: str = "port") -> int:
    port = _get(raw, key, int, where)
    if not 1 <= port <= 65535:
        raise StackConfigError(f"{where}: {key} {port} is outside 1-65535")
    return port


def _appendfsync(raw: Mapping[str, Any], where: str) -> Appendfsync:
    # "no" (the kernel's own flush, ~30 s) is not offered: the queue must outlive a crash.
    value = _get(raw, "appendfsync", str, where, DEFAULT_APPENDFSYNC)
    if value not in APPENDFSYNC:
        raise StackConfigError(f"{where}: appendfsync must be one of {', '.join(APPENDFSYNC)}")
    return value


def _route(value: object, where: str) -> str:
    if not isinstance(value, str) or not _ROUTE.match(value):
        raise StackConfigError(f"{where}: route {value!r} is not a plain path prefix like /a/b")
    return value


def _env_table(value: object, where: str) -> dict[str, str]:
    if not isinstance(value, dict):
        raise StackConfigError(f'{where} must be a table of NAME = "value"')
    for key, item in value.items():
        if not _ENV_NAME.match(key) or not isinstance(item, str):
            raise StackConfigError(f"{where}: {key} must be an upper-case name with a string value")
    return dict(value)
