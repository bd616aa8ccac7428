"""The gateway's API docs: each entrypoint's merged OpenAPI document and a Swagger UI page.

``python -m deploy.gateway.docs OUT`` writes, from ``deploy/stack.toml``::

    OUT/<entrypoint>/openapi.json   the merged document (deploy.gateway.openapi), at /openapi.json
    OUT/<entrypoint>/index.html     Swagger UI on it, at /docs
    OUT/assets/                     Swagger UI's files (the swagger-ui-bundle-v2 wheel) and
                                    docs.js, at /docs/<file>

The local launcher writes it into its data dir at each start, from the documents its
running services serve (:func:`fetch_documents`); the gateway image
(``deploy/gateway/Dockerfile``) at build time: it is never committed, so it cannot go stale.

At build time each service's own document is built in a child process (``--service
MODULE``): the app
from ``<module>.app.create_app`` with settings constructed without validation or the
environment, and its ``openapi_document()``, without the lifespan, so no database, Redis
or running service is needed. One process per service, because the services' table
models share SQLModel's one metadata (two services may both have an ``api_keys`` table).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import html
import importlib
import json
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from string import Template
from typing import TYPE_CHECKING

import httpx

from deploy.config import DEFAULT_STACK_FILE, Stack, StackConfigError, load_stack
from deploy.gateway.openapi import Document, MergeError, merge

if TYPE_CHECKING:
    from shared.app import ServiceApp

REPO_ROOT = Path(__file__).resolve().parents[2]
SITE = Path(__file__).resolve().parent / "site"
DOCUMENT_PATH = "/openapi.json"
PAGE_PATH = "/docs"
# Swagger UI's files the page loads (from the wheel) and its initializer (ours, site/).
SWAGGER_FILES = ("swagger-ui-bundle.js", "swagger-ui.css", "favicon-32x32.png")
INITIALIZER = "docs.js"
ASSETS = (*SWAGGER_FILES, INITIALIZER)
# A child's exit code for a module that is no service app (the launcher's test stand-ins).
NO_APP = 3


class DocsError(Exception):
    """A service's document cannot be built, or the documents cannot be merged."""


def service_document(module: str) -> Document:
    """The OpenAPI document of the service app ``module`` builds (in this process).

    Raises :class:`LookupError` when ``module`` has no ``app.create_app`` and
    ``settings.Settings``, the layout every service has.
    """
    return service_app(module).openapi_document()


def service_app(module: str) -> ServiceApp:
    """The service app ``module`` builds (in this process), with settings constructed
    without validation or the environment and without its lifespan; :class:`LookupError`
    as :func:`service_document`."""
    try:
        factory = importlib.import_module(f"{module}.app").create_app
        settings = importlib.import_module(f"{module}.settings").Settings
    except ModuleNotFoundError as exc:
        if exc.name not in (module, f"{module}.app", f"{module}.settings"):
            raise
        raise LookupError(f"{module} has no app and settings modules") from None
    except AttributeError:
        raise LookupError(f"{module} has no create_app and Settings") from None
    # Only now: a module that is no service (a test's stand-in) is told apart in a few ms.
    from shared.app import ServiceApp

    app = factory(settings.model_construct())
    if not isinstance(app, ServiceApp):
        raise LookupError(f"{module}.app.create_app does not build a service app")
    return app


def document_command(module: str) -> list[str]:
    """The child process that prints ``module``'s document as JSON."""
    return [sys.executable, "-m", "deploy.gateway.docs", "--service", module]


async def build_documents(modules: Mapping[str, str]) -> tuple[dict[str, Document], list[str]]:
    """Each service's document (service name → module), built in parallel children; and
    notes naming the services left out because their module is no service app."""
    documents: dict[str, Document] = {}
    notes: list[str] = []

    async def build(name: str, module: str) -> None:
        process = await asyncio.create_subprocess_exec(
            *document_command(module),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=REPO_ROOT,
        )
        try:
            out, err = await process.communicate()
        finally:
            if process.returncode is None:  # cancelled: the child goes too
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
        detail = err.decode(errors="replace").strip().splitlines()
        if process.returncode == NO_APP:
            notes.append(f"{name}: {detail[-1] if detail else 'no service app'}")
        elif process.returncode != 0:
            last = detail[-1] if detail else f"exit code {process.returncode}"
            raise DocsError(f"cannot build {name}'s OpenAPI document: {last}")
        else:
            documents[name] = json.loads(out)

    try:
        async with asyncio.TaskGroup() as group:
            for name, module in modules.items():
                group.create_task(build(name, module))
    except ExceptionGroup as failures:
        raise failures.exceptions[0] from None
    return documents, notes


async def fetch_documents(
    urls: Mapping[str, str], client: httpx.AsyncClient
) -> tuple[dict[str, Document], list[str]]:
    """Each running service's own document (service name → its base URL), read from its
    ``/openapi.json``; and notes naming the services left out because they serve none (an
    answer that is not an OpenAPI document with paths, as a test's stand-in gives)."""
    documents: dict[str, Document] = {}
    notes: list[str] = []

    async def fetch(name: str, url: str) -> None:
        try:
            response = await client.get(f"{url}{DOCUMENT_PATH}")
        except httpx.HTTPError as exc:
            raise DocsError(f"cannot read {name}'s OpenAPI document: {exc!r}") from None
        try:
            document = response.json() if response.status_code == 200 else None
        except ValueError:
            document = None
        if not isinstance(document, dict) or not isinstance(document.get("paths"), dict):
            notes.append(f"{name}: {url}{DOCUMENT_PATH} serves no OpenAPI document")
        else:
            documents[name] = document

    try:
        async with asyncio.TaskGroup() as group:
            for name, url in urls.items():
                group.create_task(fetch(name, url))
    except ExceptionGroup as failures:
        raise failures.exceptions[0] from None
    return documents, sorted(notes)


def write_site(stack: Stack, documents: Mapping[str, Document], out: Path) -> list[str]:
    """Write the docs tree into ``out`` (replacing what was there); return the names of
    the entrypoints documented (those with at least one service document)."""
    from swagger_ui_bundle import swagger_ui_path  # type: ignore[import-untyped]

    if out.exists():
        shutil.rmtree(out)
    assets = out / "assets"
    assets.mkdir(parents=True)
    for name in SWAGGER_FILES:
        (assets / name).write_bytes((swagger_ui_path / name).read_bytes())
    shutil.copyfile(SITE / INITIALIZER, assets / INITIALIZER)
    versions = {
        key: hashlib.sha256((assets / name).read_bytes()).hexdigest()[:16]
        for key, name in (
            ("bundle_version", "swagger-ui-bundle.js"),
            ("css_version", "swagger-ui.css"),
            ("favicon_version", "favicon-32x32.png"),
            ("init_version", INITIALIZER),
        )
    }
    page = Template((SITE / "index.html").read_text(encoding="utf-8"))
    documented = []
    for entrypoint in stack.entrypoints:
        if not any(s.entrypoint == entrypoint.name and s.name in documents for s in stack.services):
            continue
        try:
            document = merge(stack, entrypoint, documents)
        except MergeError as exc:
            raise DocsError(f"entrypoint {entrypoint.name!r}: {exc}") from None
        folder = out / entrypoint.name
        folder.mkdir()
        (folder / "openapi.json").write_text(
            json.dumps(document, separators=(",", ":")), encoding="utf-8"
        )
        (folder / "index.html").write_text(
            page.substitute(versions, title=html.escape(entrypoint.title)), encoding="utf-8"
        )
        documented.append(entrypoint.name)
    return documented


def main(argv: list[str] | None = None) -> int:
    """``python -m deploy.gateway.docs OUT`` (every web service must be a service app) or
    ``--service MODULE`` (one document on standard output)."""
    parser = argparse.ArgumentParser(prog="python -m deploy.gateway.docs", description=__doc__)
    parser.add_argument("out", nargs="?", type=Path, help="the folder to write")
    parser.add_argument("--stack", type=Path, default=DEFAULT_STACK_FILE)
    parser.add_argument("--service", metavar="MODULE", help="print one service's document")
    args = parser.parse_args(argv)
    if args.service:
        try:
            document = service_document(args.service)
        except LookupError as exc:
            print(exc, file=sys.stderr)
            return NO_APP
        json.dump(document, sys.stdout)
        return 0
    if args.out is None:
        parser.error("give the folder to write (or --service MODULE)")
    try:
        stack = load_stack(args.stack)
        modules = {s.name: s.module for s in stack.web_services}
        documents, notes = asyncio.run(build_documents(modules))
        if notes:
            raise DocsError(f"no OpenAPI document for {'; '.join(notes)}")
        write_site(stack, documents, args.out)
    except (StackConfigError, DocsError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
