"""The gateway's ``location`` blocks that serve files or answer for nginx itself: the API
docs, the web UIs, the answer to TRACE, and which of the gateway's own error answers a
location uses. Split from :mod:`deploy.gateway.render`, which assembles them into each
entrypoint's ``server``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

from deploy.config import Entrypoint, Service
from deploy.gateway.docs import ASSETS, DOCUMENT_PATH, PAGE_PATH

__all__ = [
    "NO_ROUTE_METHOD",
    "TRACE_PATH",
    "docs",
    "error_pages",
    "location_matches",
    "static",
    "too_large",
    "trace_map",
    "trace_proxies",
    "ui",
]


# The docs' files: their type by extension, and whether it is text (sent with a charset).
_FILE_TYPES = {
    "json": ("application/json", False),
    "html": ("text/html", True),
    "js": ("application/javascript", True),
    "css": ("text/css", True),
    "png": ("image/png", False),
}
# The page and the document change with every build; the page names its files with a
# hash of their content (?v=...), so those may be kept for good.
_REVALIDATE = "no-cache"
_KEEP = "public, max-age=31536000, immutable"


def docs(entrypoint: Entrypoint, root: str) -> list[str]:
    """The API docs of ``entrypoint``: its document, its page and the page's files, from
    ``root`` (the directory the docs were built into)."""
    assets = "|".join(asset.replace(".", "[.]") for asset in ASSETS)
    # Files not written (a stack without service apps) are missing paths (@not_found).
    return [
        *static(f"= {DOCUMENT_PATH}", f"{root}/{entrypoint.name}/openapi.json", _REVALIDATE),
        *static(f"= {PAGE_PATH}", f"{root}/{entrypoint.name}/index.html", _REVALIDATE),
        *static(f"~ ^{PAGE_PATH}/(?<docs_file>{assets})$", f"{root}/assets/$docs_file", _KEEP),
    ]


# The web UIs' files by extension (nginx's own mime.types is not included anywhere).
_UI_TYPES = {
    "text/html": "html",
    "application/javascript": "js mjs",
    "text/css": "css",
    "application/json": "json map",
    "image/svg+xml": "svg",
    "image/x-icon": "ico",
    "image/png": "png",
    "image/jpeg": "jpg jpeg",
    "image/gif": "gif",
    "image/webp": "webp",
    "image/avif": "avif",
    "font/woff": "woff",
    "font/woff2": "woff2",
    "font/ttf": "ttf",
    "application/wasm": "wasm",
    "text/plain": "txt",
    "application/manifest+json": "webmanifest",
}


def ui(root: str) -> list[str]:
    """A single-page app in ``root``: its files at their paths, ``index.html`` for any
    other path (its router decides), as the reference servers serve theirs. The build
    names every file under ``/assets/`` by a hash of its content, so those are kept for
    good and a missing one is a 404 (an HTML page there would be run as a script)."""
    types = " ".join(f"{kind} {exts};" for kind, exts in _UI_TYPES.items())

    def body(cache: str) -> list[str]:
        return [
            f"root {root};",
            f"types {{ {types} }}",
            "charset utf-8;",
            "charset_types text/css application/javascript application/json image/svg+xml;",
            f'add_header Cache-Control "{cache}";',
            "add_header X-Request-ID $gateway_request_id;",
            "add_header X-Content-Type-Options nosniff;",
            *error_pages(None),
            "error_page 405 @method_not_allowed;",
            # Refused before a file is looked up: the lookup types the answer (text/html
            # for index.html) and the JSON 405 would keep that type.
            "if ($request_method !~ ^(GET|HEAD)$) { return 405; }",
        ]

    return [
        "location / {",
        *(f"    {line}" for line in body(_REVALIDATE)),
        "    try_files $uri @ui_index;",
        "}",
        "location @ui_index {",
        *(f"    {line}" for line in body(_REVALIDATE)),
        "    error_page 404 @not_found;",
        "    try_files /index.html =404;",
        "}",
        "location /assets/ {",
        *(f"    {line}" for line in body(_KEEP)),
        "    error_page 404 @not_found;",
        "    try_files $uri =404;",
        "}",
    ]


def static(match: str, file: str, cache: str) -> list[str]:
    """A location answering GET and HEAD with ``file``, typed by its extension (the URI's
    may have none), other methods with a 405 and a missing file with a 404, as JSON."""
    known = _FILE_TYPES.get(file.rsplit(".", 1)[-1])
    if known is not None:
        typing, text = ["types { }", f"default_type {known[0]};"], known[1]
    else:  # one location for several files: by the URI's extension, which is the file's
        names = " ".join(f"{kind} {ext};" for ext, (kind, _) in _FILE_TYPES.items())
        typing, text = [f"types {{ {names} }}"], True
    # text/html is always one of the charset_types.
    charset = ["charset utf-8;", "charset_types text/css application/javascript;"]
    body = [
        f"alias {file};",
        *typing,
        *(charset if text else []),
        f'add_header Cache-Control "{cache}";',
        "add_header X-Request-ID $gateway_request_id;",
        "add_header X-Content-Type-Options nosniff;",
        # A location with an error_page of its own inherits none: the server's repeated.
        *error_pages(None),
        "error_page 404 @not_found;",
        "error_page 405 @method_not_allowed;",
    ]
    return [f"location {match} {{", *(f"    {line}" for line in body), "}"]


def error_pages(service: Service | None) -> list[str]:
    """The gateway's own errors, answered by the named locations render writes
    (``deploy.gateway.render._gateway_errors``). A service with a body limit of its own
    has a 413 of its own (naming its limit); its locations repeat the rest, since a
    location that sets any ``error_page`` inherits none."""
    return [
        f"error_page 413 @{too_large(service)};",
        "error_page 502 @bad_gateway;",
        "error_page 503 @unavailable;",
        "error_page 504 @upstream_timeout;",
    ]


def too_large(service: Service | None) -> str:
    """The named location answering a 413 on ``service``'s routes (or the gateway's)."""
    return "payload_too_large" + (f"_{service.name.replace('-', '_')}" if service else "")


# nginx refuses TRACE itself, before it picks a location, so the server's 405 error page
# sends it on by its path (trace_map): to the path's service, asked with this method, which
# no route of any service takes (a test checks) and which uvicorn's parser knows; the
# service answers its 405 with the path's Allow, or its 404. TRACE itself never reaches a
# service, and the request's body and headers are not passed on.
NO_ROUTE_METHOD = "PROPFIND"
# Internal: TRACE_PATH + "<service>" asks the service about the request's own URI,
# TRACE_PATH + "<service>/<probe>" about the probe's path at the service.
TRACE_PATH = "/_gateway/trace/"
_LOCATION = re.compile(r"location ((?:= |~ |\^~ )?[^@\s]\S*) \{")
# What a path prefix may hold (deploy.stack_fields' routes, the gateway's own paths), so
# that it goes into a regular expression with only "." escaped, as "[.]": no backslashes
# in nginx strings.
_LITERAL = re.compile(r"^[A-Za-z0-9/_.~-]+$")


def location_matches(lines: Iterable[str]) -> list[str]:
    """The matches (``= /a``, ``~ ^/b$``, ``/c/``) of the unnamed locations opened at the
    start of ``lines`` (the nested ones are indented)."""
    return [m[1] for line in lines if (m := _LOCATION.match(line))]


def trace_map(variable: str, answers: Sequence[tuple[str, str]]) -> list[str]:
    """A ``map`` of ``$uri`` to where a TRACE goes: each location's match with its answer
    (an error page target), in the order nginx picks a location by (exact matches,
    regular expressions, the longest prefix; ``/`` is the default, else ``@not_found``)."""
    default = next((target for m, target in answers if m == "/"), "@not_found")
    ordered = [(f'"~^{_literal(m[2:])}$"', t) for m, t in answers if m.startswith("= ")]
    ordered += [(f'"~{m[2:]}"', t) for m, t in answers if m.startswith("~ ")]
    prefixes = [(m.removeprefix("^~ "), t) for m, t in answers if m[0] not in "=~"]
    prefixes.sort(key=lambda answer: len(answer[0]), reverse=True)
    ordered += [(f'"~^{_literal(p)}"', t) for p, t in prefixes if p != "/"]
    lines = [f"map $uri {variable} {{"]
    lines += [f"    {match} {target};" for match, target in ordered]
    return [*lines, f"    default {default};", "}"]


def trace_proxies(upstreams: Mapping[str, str], headers: Sequence[str]) -> list[str]:
    """The internal location the TRACE targets of :func:`trace_map` send to each service
    (service name -> upstream name): :data:`NO_ROUTE_METHOD` on the request's URI, or on a
    probe's path, with the gateway's own request ``headers`` only (its
    ``proxy_set_header`` lines)."""
    lines = [
        f"location ^~ {TRACE_PATH} {{",
        "    internal;",
        f"    proxy_method {NO_ROUTE_METHOD};",
        "    proxy_pass_request_headers off;",
        "    proxy_pass_request_body off;",
        # Set here, a location's proxy_set_header replaces the inherited ones.
        *(f"    {header}" for header in headers),
        "    # The client's length, not its body: the service would wait for it.",
        '    proxy_set_header Content-Length "";',
    ]
    for service, upstream in upstreams.items():
        lines += [
            f"    location = {TRACE_PATH}{service} {{ proxy_pass http://{upstream}$request_uri; }}",
            f"    location {TRACE_PATH}{service}/ {{ proxy_pass http://{upstream}/; }}",
        ]
    return [*lines, "}"]


def _literal(path: str) -> str:
    if not _LITERAL.match(path):
        raise ValueError(f"gateway location path holds more than [A-Za-z0-9/_.~-]: {path}")
    return path.replace(".", "[.]")
