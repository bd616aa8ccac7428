"""The web UIs at the entrypoints' ``/`` (deploy/gateway/ui.py, deploy/ui.toml): the real
gateway serving a UI folder beside every route it had, and the pinned wheels fetched,
checked and unpacked."""

from __future__ import annotations

import asyncio
import hashlib
import io
import re
import zipfile
from dataclasses import replace
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from deploy.config import load_stack
from deploy.gateway.render import IMAGE_DOCS_ROOT, compose_target
from deploy.gateway.ui import (
    IMAGE_UI_ROOT,
    LICENSES,
    SIMPLE_JSON,
    SITE,
    Pin,
    UiError,
    ensure_cached,
    install,
    load_pins,
)
from deploy.local.gateway import link_uis, served_uis, ui_cache
from deploy.local.options import parse_options
from shared.errors import NO_SUCH_ENDPOINT
from tests.deploy.test_gateway import gateway_without_upstreams

REPO_ROOT = Path(__file__).resolve().parents[2]
STACK = load_stack()
PINS = load_pins()
INDEX = "<!doctype html><title>ui of {name}</title><script src='/assets/app-1a2b3c.js'></script>"
ASSET = "console.log('hashed')"
KEEP = "public, max-age=31536000, immutable"


def write_ui(folder: Path, name: str) -> None:
    (folder / "assets").mkdir(parents=True)
    (folder / "index.html").write_text(INDEX.format(name=name))
    (folder / "assets" / "app-1a2b3c.js").write_text(ASSET)
    (folder / "favicon.svg").write_text("<svg xmlns='http://www.w3.org/2000/svg'/>")


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory):
    """Real nginx, no service running, each entrypoint serving a small UI of its own."""
    prefix = tmp_path_factory.mktemp("gw")
    for entrypoint in STACK.entrypoints:
        write_ui(prefix / "ui" / entrypoint.name, entrypoint.name)
    names = tuple(e.name for e in STACK.entrypoints)
    with (
        gateway_without_upstreams(prefix, uis=names) as ports,
        httpx.Client(timeout=5, trust_env=False) as client,
    ):

        def get(entrypoint: str, path: str, method: str = "GET") -> httpx.Response:
            return client.request(method, f"http://127.0.0.1:{ports[entrypoint]}{path}")

        yield get


@pytest.mark.parametrize("entrypoint", ["platform", "agent"])
@pytest.mark.parametrize("path", ["/", "/runs/8d2a/dag", "/settings/members?tab=2", "/index.html"])
def test_the_root_and_any_deep_link_get_the_uis_index_revalidated(gateway, entrypoint, path):
    page = gateway(entrypoint, path)
    assert page.status_code == 200
    assert page.text == INDEX.format(name=entrypoint)
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    assert page.headers["cache-control"] == "no-cache"
    assert page.headers["x-request-id"]


def test_a_hashed_asset_is_cached_for_good(gateway):
    asset = gateway("platform", "/assets/app-1a2b3c.js")
    assert asset.status_code == 200
    assert asset.text == ASSET
    assert asset.headers["content-type"] == "application/javascript; charset=utf-8"
    assert asset.headers["cache-control"] == KEEP


def test_a_root_file_is_served_as_itself_and_revalidated(gateway):
    icon = gateway("agent", "/favicon.svg")
    assert icon.headers["content-type"] == "image/svg+xml; charset=utf-8"
    assert icon.headers["cache-control"] == "no-cache"
    assert icon.text.startswith("<svg")


def test_a_missing_asset_is_a_json_404_not_the_index(gateway):
    """A script URL answered with HTML would be run as a script."""
    assert gateway("platform", "/assets/gone-000000.js").json() == {
        "detail": ["KeyError", NO_SUCH_ENDPOINT]
    }
    assert gateway("agent", "/assets/").json() == {"detail": "Not Found"}


@pytest.mark.parametrize("path", ["/api/v1/nope", "/api", "/api/v2/x", "/_services/nope/health"])
def test_unknown_api_paths_stay_the_entrypoints_json_404(gateway, path):
    platform, agent = gateway("platform", path), gateway("agent", path)
    assert (platform.status_code, agent.status_code) == (404, 404)
    assert platform.json() == {"detail": ["KeyError", NO_SUCH_ENDPOINT]}
    assert agent.json() == {"detail": "Not Found"}


def test_a_method_the_ui_does_not_take_is_a_json_405(gateway):
    for path in ("/runs", "/", "/assets/app-1a2b3c.js"):
        refused = gateway("platform", path, method="POST")
        assert refused.status_code == 405
        assert refused.headers["content-type"] == "application/json"
        assert refused.json() == {"detail": "Method Not Allowed"}


@pytest.mark.parametrize(
    ("entrypoint", "path", "status"),
    [
        # A service's route: proxied (nothing runs behind this gateway, hence 502).
        ("platform", "/api/v1/runs", 502),
        ("platform", "/api/v1/secrets", 502),
        ("platform", "/api/v1/secrets_operations/backup", 502),
        ("platform", "/api/v1/webhooks/custom/x/events", 502),
        ("platform", "/health", 502),
        ("platform", "/_services/tracking/ready", 502),
        ("agent", "/api/v1/info", 502),
        ("agent", "/api/v1/users/x/activate", 502),
        ("agent", "/health/live", 502),
        ("agent", "/_services/agent-accounts/openapi.json", 502),
        # The gateway's own answers.
        ("platform", "/api/v1/stack-deployment", 501),
        ("agent", "/api/v1/agents/x", 501),
        ("platform", "/metrics", 404),
        ("agent", "/metrics", 404),
        ("platform", "/openapi.json", 404),  # no docs written in this prefix
        ("agent", "/docs", 404),
    ],
)
def test_every_existing_route_still_goes_where_it_did(gateway, entrypoint, path, status):
    answer = gateway(entrypoint, path)
    assert answer.status_code == status
    assert answer.headers["content-type"] == "application/json"


@pytest.mark.parametrize(
    ("entrypoint", "path", "status"),
    [
        # The UI's and the docs' files: what a method they do not take gets.
        ("platform", "/", 405),
        ("agent", "/runs/8d2a/dag", 405),
        ("platform", "/assets/app-1a2b3c.js", 405),
        ("platform", "/openapi.json", 405),
        ("agent", "/docs/docs.js", 405),
        # A service's path: its service is asked (nothing runs behind this gateway).
        ("platform", "/api/v1/runs", 502),
        ("platform", "/api/v1/webhooks/custom/x/events", 502),
        ("agent", "/_services/agent-accounts/openapi.json", 502),
        # The gateway's own answers to every method.
        ("platform", "/api/v1/stack-deployment", 501),
        ("agent", "/api/v1/agents/x", 501),
        ("platform", "/metrics", 404),
        ("agent", "/api/v1/nope", 404),
        ("platform", "/_services/nope/health", 404),
        ("platform", "/_gateway/errors/bad_request", 404),
        ("platform", "/_gateway/trace/tracking", 404),
    ],
)
def test_trace_is_answered_as_the_paths_location_answers(gateway, entrypoint, path, status):
    """nginx refuses TRACE before it picks a location; the gateway answers it as that
    location would: JSON in the entrypoint's shape, Allow on a 405."""
    answer = gateway(entrypoint, path, method="TRACE")
    assert answer.status_code == status
    assert answer.headers["content-type"] == "application/json"
    assert answer.headers["x-request-id"]
    if status == 405:
        assert answer.headers["allow"] == "GET, HEAD"
        assert answer.json() == {"detail": "Method Not Allowed"}
    else:
        assert answer.json() == gateway(entrypoint, path).json()


def test_the_image_configs_serve_the_uis_the_gateway_image_unpacks():
    target = compose_target(STACK)
    assert target.ui_roots == {
        "platform": f"{IMAGE_UI_ROOT}/platform/{SITE}",
        "agent": f"{IMAGE_UI_ROOT}/agent/{SITE}",
    }
    dockerfile = (REPO_ROOT / "deploy/gateway/Dockerfile").read_text()
    assert "RUN uv run --frozen --no-sync python -m deploy.gateway.ui /ui" in dockerfile
    assert f"COPY --from=docs /ui {IMAGE_UI_ROOT}" in dockerfile
    assert IMAGE_DOCS_ROOT.rsplit("/", 1)[0] == IMAGE_UI_ROOT.rsplit("/", 1)[0]
    ignore = (REPO_ROOT / "deploy/gateway/Dockerfile.dockerignore").read_text().splitlines()
    assert "!deploy/ui.toml" in ignore


def test_each_pin_names_an_entrypoint_of_the_stack_and_a_file_on_the_index():
    names = {e.name for e in STACK.entrypoints}
    assert {pin.entrypoint for pin in PINS.uis} == names
    assert PINS.index == "https://pypi.org/simple"
    for pin in PINS.uis:
        assert pin.wheel.startswith(f"{pin.package}-{pin.version}-")


GOOD_PIN = """index = "https://pypi.org/simple"
[[ui]]
entrypoint = "platform"
title = "demo UI"
package = "demo"
version = "1.0"
wheel = "demo-1.0-py3-none-any.whl"
sha256 = "{sha}"
folder = "{folder}"
"""


@pytest.mark.parametrize(
    ("sha", "folder", "message"),
    [
        ("ABC", "demo/ui", "sha256 must be 64 lower-case hex digits"),
        ("0" * 64, "demo/../../etc", "folder 'demo/../../etc' is not a plain relative path"),
        ("0" * 64, "/demo/ui", "folder '/demo/ui' is not a plain relative path"),
    ],
)
def test_an_invalid_pin_is_one_line_naming_the_file_and_the_field(tmp_path, sha, folder, message):
    pins = tmp_path / "ui.toml"
    pins.write_text(GOOD_PIN.format(sha=sha, folder=folder))
    with pytest.raises(UiError, match=rf"^{re.escape(f'{pins}: ui #1: {message}')}$"):
        load_pins(pins)
    pins.write_text(GOOD_PIN.format(sha="0" * 64, folder="demo/ui"))
    assert load_pins(pins).uis[0].folder == "demo/ui"


# --- the fetch, against an index served in process ------------------------------------


def build_wheel(folder: str) -> bytes:
    """A wheel holding a UI under ``folder``, code that is no part of it, and licences."""
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w") as wheel:
        wheel.writestr(f"{folder}/index.html", INDEX.format(name="wheel"))
        wheel.writestr(f"{folder}/assets/app-1a2b3c.js", ASSET)
        wheel.writestr("demo/server.py", "print('not the UI')")
        wheel.writestr("demo-1.0.dist-info/METADATA", "Name: demo\nLicense-Expression: MIT\n")
        wheel.writestr("demo-1.0.dist-info/licenses/LICENSE", "MIT licence text")
        wheel.writestr("demo-1.0.dist-info/RECORD", "")
        wheel.writestr("../escape.txt", "outside")
    return data.getvalue()


def index_app(wheel: bytes, filename: str) -> Starlette:
    """The two pages of a simple index a fetch reads: the project's, and the file."""

    async def project(request: Request) -> Response:
        assert request.headers["accept"] == SIMPLE_JSON
        files = [{"filename": filename, "url": f"../../files/{filename}", "hashes": {}}]
        return JSONResponse({"files": files}, media_type=SIMPLE_JSON)

    async def file(request: Request) -> Response:
        return Response(wheel, media_type="application/octet-stream")

    return Starlette(routes=[Route("/simple/demo/", project), Route(f"/files/{filename}", file)])


def demo_pin(wheel: bytes, sha256: str | None = None) -> Pin:
    return Pin(
        entrypoint="platform",
        title="demo UI",
        package="demo",
        version="1.0",
        wheel="demo-1.0-py3-none-any.whl",
        sha256=sha256 or hashlib.sha256(wheel).hexdigest(),
        folder="demo/ui/dist",
    )


def fetch(pin: Pin, wheel: bytes, cache: Path) -> Path:
    async def run() -> Path:
        transport = httpx.ASGITransport(app=index_app(wheel, pin.wheel))
        async with httpx.AsyncClient(transport=transport, base_url="http://index") as client:
            return await ensure_cached(pin, "http://index/simple", cache, client)

    return asyncio.run(run())


def test_a_wheel_whose_sha256_is_not_the_pinned_one_is_refused(tmp_path):
    wheel = build_wheel("demo/ui/dist")
    pin = demo_pin(wheel, sha256="0" * 64)
    with pytest.raises(UiError, match=r"has sha256 [0-9a-f]{64}, not the pinned 0{64}: refused"):
        fetch(pin, wheel, tmp_path / "cache")
    assert list((tmp_path / "cache").iterdir()) == []  # nothing kept, not even the wheel


def test_a_wheel_with_the_pinned_sha256_gives_only_its_ui_and_its_licences(tmp_path):
    wheel = build_wheel("demo/ui/dist")
    copy = fetch(demo_pin(wheel), wheel, tmp_path / "cache")
    files = sorted(str(p.relative_to(copy)) for p in copy.rglob("*") if p.is_file())
    assert files == [
        f"{LICENSES}/METADATA",
        f"{LICENSES}/licenses/LICENSE",
        f"{SITE}/assets/app-1a2b3c.js",
        f"{SITE}/index.html",
    ]
    assert not (tmp_path / "escape.txt").exists()
    # Cached: a second fetch reads nothing from the index.
    assert fetch(demo_pin(wheel), b"not a wheel", tmp_path / "cache") == copy


def test_installing_over_a_folder_refuses_and_keeps_what_is_there(tmp_path):
    wheel = build_wheel("demo/ui/dist")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "mine.txt").write_text("kept")

    async def run() -> None:
        transport = httpx.ASGITransport(app=index_app(wheel, "demo-1.0-py3-none-any.whl"))
        async with httpx.AsyncClient(transport=transport) as client:
            await install(demo_pin(wheel), "http://index/simple", tmp_path / "out", client)

    with pytest.raises(UiError, match=r"cannot unpack the demo UI into .*/out: File exists$"):
        asyncio.run(run())
    assert (tmp_path / "out" / "mine.txt").read_text() == "kept"


def test_a_pinned_folder_the_wheel_lacks_is_refused(tmp_path):
    wheel = build_wheel("demo/other")
    with pytest.raises(UiError, match=r"has no demo/ui/dist/index\.html"):
        fetch(demo_pin(wheel), wheel, tmp_path / "cache")


def test_the_launcher_links_cached_uis_into_the_gateway_and_the_banner_offers_them(tmp_path):
    cache_home = tmp_path / "xdg"
    for pin in PINS.uis:  # already in the cache: no network needed
        write_ui(ui_cache({"XDG_CACHE_HOME": str(cache_home)}) / pin.key / SITE, pin.entrypoint)
    options = parse_options(["--data-dir", str(tmp_path / "data")], {})
    notes = asyncio.run(link_uis(options, {"XDG_CACHE_HOME": str(cache_home)}))
    assert notes == []
    assert served_uis(options) == [e.name for e in STACK.entrypoints]
    linked = options.data_dir / "gateway" / "ui" / "agent" / "index.html"
    assert linked.read_text() == INDEX.format(name="agent")


def test_a_ui_that_cannot_be_fetched_leaves_its_entrypoint_without_it(tmp_path):
    cache_home = tmp_path / "xdg"
    kitaru = next(pin for pin in PINS.uis if pin.entrypoint == "agent")
    write_ui(ui_cache({"XDG_CACHE_HOME": str(cache_home)}) / kitaru.key / SITE, "agent")
    # The platform's pin is changed so that no cached copy matches, and no index answers.
    options = parse_options(["--data-dir", str(tmp_path / "data")], {})
    zenml = next(pin for pin in PINS.uis if pin.entrypoint == "platform")
    broken = replace(zenml, sha256="f" * 64)
    notes = asyncio.run(
        link_uis(
            options,
            {"XDG_CACHE_HOME": str(cache_home)},
            pins=replace(PINS, index="http://127.0.0.1:9/simple", uis=(broken, kitaru)),
        )
    )
    assert served_uis(options) == ["agent"]
    assert len(notes) == 1
    assert re.match(
        r"error: the ZenML dashboard is not served at http://127\.0\.0\.1:8080/: cannot "
        r"download zenml-0\.96\.3-py3-none-any\.whl from http://127\.0\.0\.1:9/simple: .+; "
        r"check the network, or the pin in ui\.toml$",
        notes[0],
    ), notes[0]


def test_an_entrypoint_a_service_takes_whole_is_left_without_its_ui(tmp_path):
    """A stack file of one's own may route every path of an entrypoint to a service."""
    cache_home = tmp_path / "xdg"
    for pin in PINS.uis:
        write_ui(ui_cache({"XDG_CACHE_HOME": str(cache_home)}) / pin.key / SITE, pin.entrypoint)
    options = parse_options(["--data-dir", str(tmp_path / "data")], {})
    services = tuple(
        s.model_copy(update={"routes": ("/",)}) if s.name == "agent-accounts" else s
        for s in options.stack.services
    )
    options = replace(options, stack=replace(options.stack, services=services))
    notes = asyncio.run(link_uis(options, {"XDG_CACHE_HOME": str(cache_home)}))
    assert notes == ["the kitaru UI is not served: agent-accounts takes every path"]
    assert served_uis(options) == ["platform"]


# --- the real pinned wheels (network to the index) ------------------------------------


def test_the_pinned_wheels_are_fetched_checked_and_hold_an_index_html(tmp_path):
    async def run() -> list[Path]:
        async with httpx.AsyncClient(timeout=60.0, follow_redirects=True) as client:
            return [await ensure_cached(pin, PINS.index, tmp_path, client) for pin in PINS.uis]

    for pin, copy in zip(PINS.uis, asyncio.run(run()), strict=True):
        assert copy.name == pin.key
        index = (copy / SITE / "index.html").read_text()
        assert re.search(r'src="/assets/index-[\w-]+\.js"', index), pin.package
        assert (copy / LICENSES / "METADATA").is_file()
    # kitaru's wheel carries its licence text; zenml's only METADATA's License-Expression.
    assert (tmp_path / PINS.uis[1].key / LICENSES / "licenses" / "LICENSE").is_file()
    assert (
        "License-Expression: Apache-2.0"
        in (tmp_path / PINS.uis[0].key / LICENSES / "METADATA").read_text()
    )
