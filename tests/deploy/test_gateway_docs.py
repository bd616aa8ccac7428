"""The gateway's API docs (deploy/gateway/docs.py): the files written for each entrypoint,
served by the real nginx on the local config, the children that build the services'
documents (at the image's build), the launcher reading the running services' documents,
and the gateway image that builds them."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from deploy.config import Stack
from deploy.gateway.__main__ import COMPOSE_CONF
from deploy.gateway.docs import ASSETS, DocsError, build_documents, fetch_documents, write_site
from deploy.gateway.render import IMAGE_DOCS_ROOT
from deploy.local.gateway import write_docs
from deploy.local.options import parse_options
from tests.deploy.test_gateway import STACK, gateway_without_upstreams

REPO_ROOT = Path(__file__).resolve().parents[2]
VERSIONS = {"platform": "0.96.3", "agent": "0.27.2"}
CONTENT_TYPES = {
    "swagger-ui-bundle.js": "application/javascript; charset=utf-8",
    "docs.js": "application/javascript; charset=utf-8",
    "swagger-ui.css": "text/css; charset=utf-8",
    "favicon-32x32.png": "image/png",
}


def documents(stack: Stack) -> dict[str, dict[str, Any]]:
    """A small document for each web service, with one path under its first route."""
    made = {}
    for service in stack.web_services:
        assert service.entrypoint is not None
        path = "/api/v1/info" if service.routes[0] == "/" else f"{service.routes[0]}/{{id}}"
        made[service.name] = {
            "openapi": "3.1.0",
            "info": {"title": service.name, "version": VERSIONS[service.entrypoint]},
            "paths": {
                path: {
                    "get": {
                        "operationId": f"{service.name}_get",
                        "tags": [service.name],
                        "responses": {"200": {"description": "Successful Response"}},
                    }
                }
            },
            "components": {"schemas": {}},
        }
    return made


def asset_urls(page: str) -> list[str]:
    return re.findall(r'(?:src|href)="([^"]+)"', page)


def test_each_entrypoint_gets_its_document_and_a_page_loading_only_local_files(tmp_path):
    out = tmp_path / "docs"
    assert write_site(STACK, documents(STACK), out) == ["platform", "agent"]
    for entrypoint in STACK.entrypoints:
        page = (out / entrypoint.name / "index.html").read_text()
        assert not re.search(r"https?://", page)
        assert f"<title>{entrypoint.title}</title>" in page
        urls = asset_urls(page)
        assert sorted(url.split("?")[0] for url in urls) == sorted(f"/docs/{a}" for a in ASSETS)
        assert all(re.search(r"\?v=[0-9a-f]{16}$", url) for url in urls)
    for asset in ASSETS:
        assert (out / "assets" / asset).stat().st_size > 0
    # The initializer loads the entrypoint's own document, and asks no online validator.
    initializer = (out / "assets" / "docs.js").read_text()
    assert 'url: "/openapi.json"' in initializer
    assert "validatorUrl: null" in initializer


def test_writing_again_replaces_what_was_there(tmp_path):
    out = tmp_path / "docs"
    write_site(STACK, documents(STACK), out)
    only_platform = {k: v for k, v in documents(STACK).items() if k != "agent-accounts"}
    assert write_site(STACK, only_platform, out) == ["platform"]
    assert not (out / "agent").exists()


def test_the_gateway_serves_the_docs_on_both_entrypoints(tmp_path):
    prefix = tmp_path / "gw"
    with (
        gateway_without_upstreams(prefix) as ports,
        httpx.Client(timeout=5, trust_env=False) as client,
    ):

        def get(entrypoint: str, path: str, **kwargs: Any) -> httpx.Response:
            return client.request(
                kwargs.pop("method", "GET"), f"http://127.0.0.1:{ports[entrypoint]}{path}", **kwargs
            )

        # Not written yet: a missing path in the entrypoint's shape, not nginx's page.
        assert get("agent", "/openapi.json").json() == {"detail": "Not Found"}
        assert get("platform", "/docs").json()["detail"][0] == "KeyError"
        write_site(STACK, documents(STACK), prefix / "docs")
        for entrypoint in STACK.entrypoints:
            name = entrypoint.name
            document = get(name, "/openapi.json")
            assert document.status_code == 200
            assert document.headers["content-type"] == "application/json"
            assert document.headers["cache-control"] == "no-cache"
            assert document.headers["x-request-id"]
            assert document.json()["info"]["title"] == entrypoint.title
            again = get(name, "/openapi.json", headers={"If-None-Match": document.headers["etag"]})
            assert again.status_code == 304
            page = get(name, "/docs")
            assert page.status_code == 200
            assert page.headers["content-type"] == "text/html; charset=utf-8"
            assert page.headers["cache-control"] == "no-cache"
            for url in asset_urls(page.text):
                asset = get(name, url)
                assert asset.status_code == 200, url
                assert asset.headers["content-type"] == CONTENT_TYPES[url[6:].split("?")[0]]
                assert asset.headers["cache-control"] == "public, max-age=31536000, immutable"
            refused = get(name, "/openapi.json", method="POST", content=b"{}")
            assert refused.status_code == 405
            assert refused.json() == {"detail": "Method Not Allowed"}
            assert refused.headers["allow"] == "GET, HEAD"
        # Anything else under /docs/ is routed as before: the entrypoint's 404 (without
        # a web UI, which would answer its index.html).
        missing = get("platform", "/docs/other.js")
        assert missing.status_code == 404
        assert missing.json()["detail"][0] == "KeyError"
        assert get("agent", "/docs/other.js").json() == {"detail": "Not Found"}


def test_a_module_that_is_no_service_app_is_left_out_with_a_note():
    found, notes = asyncio.run(build_documents({"plain": "json"}))
    assert found == {}
    assert notes == ["plain: json has no app and settings modules"]


def broken_service(path: Path) -> None:
    """A package ``broken_service`` under ``path`` whose app fails to import."""
    package = path / "broken_service"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "app.py").write_text("raise RuntimeError('no such setting')\n")
    (package / "settings.py").write_text("")


def test_a_service_app_failing_to_build_fails_the_docs(tmp_path, monkeypatch):
    broken_service(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    with pytest.raises(DocsError, match="broken's OpenAPI document: RuntimeError: no such setting"):
        asyncio.run(build_documents({"broken": "broken_service"}))


async def serving(request: Request) -> Response:
    """A running service's ``/openapi.json``: a document, or (``/plain``) what a stand-in
    serves, an object that is no OpenAPI document."""
    if request.url.path.startswith("/plain"):
        return JSONResponse({"openapi": "3.1.0", "info": {"title": "plain"}})
    return JSONResponse({"openapi": "3.1.0", "info": {"title": "real"}, "paths": {}})


def test_the_launcher_reads_the_running_services_documents_and_leaves_out_the_others():
    urls = {"real": "http://real", "plain": "http://plain/plain", "gone": "http://gone/plain/x"}

    async def fetched() -> tuple[dict[str, Any], list[str]]:
        transport = httpx.ASGITransport(app=Starlette(routes=[Route("/{path:path}", serving)]))
        async with httpx.AsyncClient(transport=transport) as client:
            return await fetch_documents(urls, client)

    documents, notes = asyncio.run(fetched())
    assert list(documents) == ["real"]
    assert notes == [
        "gone: http://gone/plain/x/openapi.json serves no OpenAPI document",
        "plain: http://plain/plain/openapi.json serves no OpenAPI document",
    ]


def test_the_launcher_starts_without_docs_it_cannot_read(tmp_path):
    """A service that cannot be reached for its document must not stop the local stack: it
    says so, and no docs of an earlier start are left to be served as current."""
    options = parse_options(["--data-dir", str(tmp_path / "data")], {})
    stale = tmp_path / "data" / "gateway" / "docs" / "platform"
    stale.mkdir(parents=True)

    async def written() -> list[str]:
        # Every connection fails: a socket path that does not exist.
        transport = httpx.AsyncHTTPTransport(uds=str(tmp_path / "nothing-listens"))
        async with httpx.AsyncClient(transport=transport) as client:
            return await write_docs(options, [options.stack.service("identity")], client)

    notes = asyncio.run(written())
    assert len(notes) == 1
    assert notes[0].startswith(
        "error: the gateway serves no API docs: cannot read identity's OpenAPI document: "
    )
    assert not stale.exists()


def test_the_gateway_image_builds_the_docs_into_an_unprivileged_nginx():
    dockerfile = (REPO_ROOT / "deploy/gateway/Dockerfile").read_text()
    images = re.findall(r"^ARG NGINX_IMAGE=(\S+)$", dockerfile, re.M)
    assert images == ["nginxinc/nginx-unprivileged:1.27"]  # `resolve` needs >= 1.27.3
    assert re.search(r"^FROM \$\{NGINX_IMAGE\}$", dockerfile, re.M)
    assert "uv sync --frozen --no-dev --group gateway" in dockerfile
    assert "python -m deploy.gateway.docs /docs" in dockerfile
    assert f"COPY --from=docs /docs {IMAGE_DOCS_ROOT}" in dockerfile
    # Compose runs it with the committed config: nginx's pid file where user 101 may write.
    assert re.search(r"^pid /tmp/nginx\.pid;$", COMPOSE_CONF.read_text(), re.M)
    # Its own context: what the generator reads, which the services' .dockerignore leaves out.
    ignore = (REPO_ROOT / "deploy/gateway/Dockerfile.dockerignore").read_text().splitlines()
    for wanted in (
        "deploy/__init__.py",
        "deploy/config.py",
        "deploy/stack.toml",
        "deploy/gateway/",
    ):
        assert f"!{wanted}" in ignore
