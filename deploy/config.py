"""The stack description (``deploy/stack.toml``) as validated, immutable data.

Both the launcher (:mod:`deploy.local`) and the gateway renderer (:mod:`deploy.gateway`)
read the stack only through :func:`load_stack`, so the route table and the process list
cannot disagree. The file's shape is the pydantic model :class:`StackFile` (each entry's
keys, types and value rules); the rules across entries (unique names and ports, one issuer,
routes owned once) are :func:`_check_references`. Every problem in the file is reported as
one :class:`StackConfigError` line naming the file and the offending entry.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationError,
    model_validator,
)

from deploy.stack_fields import (
    ENV_NAME,
    ENV_PREFIX,
    MAX_REPLICAS,
    MODULE,
    BodySize,
    EnvTable,
    Name,
    Port,
    Routes,
    env_table,
    first_problem,
    matching,
    names,
    refuse,
    replica_count,
    secret_kinds,
)

__all__ = [
    "DEFAULT_APPENDFSYNC",
    "DEFAULT_STACK_FILE",
    "MAX_REPLICAS",
    "REPLICA_PORT_STRIDE",
    "Entrypoint",
    "Login",
    "SecretKind",
    "Service",
    "Stack",
    "StackConfigError",
    "load_stack",
    "parse_stack",
]

DEFAULT_STACK_FILE = Path(__file__).resolve().parent / "stack.toml"
# Valkey's fsync policies for its append-only file that the stack offers, and the default.
# "no" (the kernel's own flush, ~30 s) is not offered: the queue must outlive a crash.
Appendfsync = Literal["always", "everysec"]
APPENDFSYNC: tuple[Appendfsync, ...] = ("always", "everysec")
DEFAULT_APPENDFSYNC: Appendfsync = "everysec"

Kind = Literal["web", "worker"]
SecretKind = Literal["fernet", "token"]
ErrorStyle = Literal["platform", "agent"]

# Replica k (0-based) of a web service listens at its port + k * REPLICA_PORT_STRIDE on the
# local stack (8102, 8202, 8302 for tracking); containers each have their own address.
REPLICA_PORT_STRIDE = 100


class StackConfigError(Exception):
    """``deploy/stack.toml`` (or a file given instead) is missing or invalid."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Login(_Model):
    """An entrypoint's first account, as the launcher's banner tells how to use it."""

    service: StrictStr
    """The web service that creates the account at its first start."""
    user: StrictStr
    password_variable: Annotated[
        StrictStr, AfterValidator(matching(ENV_NAME, "is not a variable name"))
    ]
    """Chooses the first password (one of the service's ``passthrough``); unset, the
    service prints a random one once."""
    command: StrictStr
    """How a client logs in; ``{url}`` is the entrypoint's URL."""


class Entrypoint(_Model):
    """One public port of the gateway."""

    name: Name
    title: StrictStr
    """Defaults to the name."""
    port: Port
    error_style: ErrorStyle = "platform"
    login: Login | None = None
    unimplemented: Routes = ()
    """Path prefixes of the reference's API that no service serves: 501 at the gateway."""

    @model_validator(mode="before")
    @classmethod
    def _titled(cls, raw: Any) -> Any:
        if isinstance(raw, dict) and "title" not in raw and "name" in raw:
            return {**raw, "title": raw["name"]}
        return raw

    @model_validator(mode="after")
    def _prefixes(self) -> Entrypoint:
        if "/" in self.unimplemented:
            raise refuse("/ cannot be unimplemented")
        twice = _duplicate(self.unimplemented)
        if twice is not None:
            raise refuse(f"unimplemented prefix {twice!r} is used more than once")
        return self


_WEB_ONLY = ("port", "entrypoint", "routes", "issuer", "client_max_body_size")


class Service(_Model):
    """One process of the stack: a uvicorn web service or a worker."""

    name: Name
    module: Annotated[
        StrictStr, AfterValidator(matching(MODULE, "is not a dotted Python module name"))
    ]
    kind: Kind
    port: Port | None = None
    entrypoint: StrictStr | None = None
    routes: Routes = ()
    issuer: StrictBool = False
    owner: StrictStr = ""
    """A worker's web service (its database and settings); a web service's own name."""
    env: EnvTable = Field(default_factory=dict)
    passthrough: Annotated[
        tuple[str, ...],
        BeforeValidator(names(ENV_NAME, "passthrough entry", "is not a variable name")),
    ] = ()
    secrets: Annotated[
        dict[str, SecretKind], BeforeValidator(secret_kinds), BeforeValidator(env_table)
    ] = Field(default_factory=dict)
    env_prefix: Annotated[
        StrictStr, AfterValidator(matching(ENV_PREFIX, "must be like 'SERVICE_'", empty=True))
    ] = ""
    env_aliases: Annotated[
        tuple[str, ...],
        BeforeValidator(names(ENV_PREFIX, "env_aliases entry", "must be like 'KITARU_'")),
    ] = ()
    """Other prefixes an operator of the system it stands in for uses (kitaru's KITARU_):
    a passthrough variable is also taken under each, after env_prefix's name."""
    client_max_body_size: BodySize | None = None
    """(web) The gateway's body limit on this service's routes, when not the gateway's own."""
    replicas: Annotated[StrictInt, AfterValidator(replica_count)] = 1
    """How many processes run it (the launcher's ``--replicas`` overrides it)."""
    metrics_port: Port | None = None
    """The local stack's port of its (first replica's) Prometheus metrics, if served."""

    @model_validator(mode="before")
    @classmethod
    def _by_kind(cls, raw: Any) -> Any:
        """A web service has a port, an entrypoint and routes and owns itself; a worker
        has none of those and an owner (itself unless named)."""
        if not isinstance(raw, dict) or not isinstance(raw.get("kind"), str):
            return raw  # the fields' own errors say what is wrong
        kind, name = raw["kind"], raw.get("name")
        if kind == "web":
            if "owner" in raw:
                raise refuse("only workers have an owner")
            for key in ("port", "entrypoint", "routes"):
                if key not in raw:
                    raise refuse(f"{key} is required")
            return {**raw, "owner": name}
        if kind == "worker":
            for key in _WEB_ONLY:
                if key in raw:
                    raise refuse(f"a worker has no {key}")
            return {**raw, "owner": raw.get("owner", name)}
        raise refuse(f"kind must be 'web' or 'worker', not {kind!r}")

    def replica_names(self) -> tuple[str, ...]:
        """The name of each replica's process: the service's own when it runs once,
        ``tracking#1``, ``tracking#2`` … when it runs more than once."""
        if self.replicas == 1:
            return (self.name,)
        return tuple(f"{self.name}#{k}" for k in range(1, self.replicas + 1))

    def replica_ports(self, offset: int = 0) -> tuple[int, ...]:
        """(web) The local stack's port of each replica, ``offset`` added."""
        return _spaced(self.port, offset, self.replicas)

    def replica_metrics_ports(self, offset: int = 0) -> tuple[int, ...]:
        """The local stack's metrics port of each replica, ``offset`` added (spaced as
        :meth:`replica_ports`); none when it serves no metrics."""
        return _spaced(self.metrics_port, offset, self.replicas)


def _spaced(port: int | None, offset: int, replicas: int) -> tuple[int, ...]:
    if port is None:
        return ()
    return tuple(port + offset + k * REPLICA_PORT_STRIDE for k in range(replicas))


class _Gateway(_Model):
    listen: StrictStr = "127.0.0.1"
    client_max_body_size: BodySize = "10m"


class _Valkey(_Model):
    port: Port
    appendfsync: Appendfsync = DEFAULT_APPENDFSYNC


class _Postgres(_Model):
    port: Port


class StackFile(_Model):
    """``stack.toml`` as written: its tables and arrays of tables."""

    gateway: _Gateway
    entrypoint: tuple[Entrypoint, ...] = ()
    valkey: _Valkey
    postgres: _Postgres
    environment: EnvTable = Field(default_factory=dict)
    service: tuple[Service, ...] = ()


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
            if isinstance(count, bool) or not 1 <= count <= MAX_REPLICAS:
                raise StackConfigError(
                    f"--replicas {name}: replicas must be a whole number from 1 to {MAX_REPLICAS}"
                )
        services = tuple(
            s.model_copy(update={"replicas": counts[s.name]}) if s.name in counts else s
            for s in self.services
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
    try:
        document = StackFile.model_validate(raw)
    except ValidationError as exc:
        raise StackConfigError(first_problem(exc.errors(), raw)) from None
    stack = Stack(
        listen=document.gateway.listen,
        client_max_body_size=document.gateway.client_max_body_size,
        entrypoints=document.entrypoint,
        valkey_port=document.valkey.port,
        valkey_appendfsync=document.valkey.appendfsync,
        postgres_port=document.postgres.port,
        environment=document.environment,
        services=document.service,
    )
    _check_references(stack)
    return stack


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
    twice = _duplicate(values)
    if twice is not None:
        raise StackConfigError(f"{what} {twice!r} is used more than once")


def _duplicate(values: Sequence[Any]) -> Any:
    """The first value seen twice (``None``: none is)."""
    seen: set[Any] = set()
    for value in values:
        if value in seen:
            return value
        seen.add(value)
    return None
