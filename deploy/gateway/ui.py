"""The web UIs the gateway serves at an entrypoint's ``/``, from pinned wheels.

``deploy/ui.toml`` pins each UI: a wheel file on a package index, its sha256, and the
folder inside it that holds ``index.html`` and its assets. :func:`install` downloads that
file (the index's PEP 691 JSON page names its URL), refuses it unless its sha256 is the
pinned one, and unpacks only the folder, as ``site/``, and the wheel's licence files, as
``licenses/`` beside it. Nothing else of the wheel is kept and nothing is committed.

- The local launcher keeps each UI in a cache shared by every data dir and clone
  (:func:`ensure_cached`: ``<cache>/<package>-<version>-<sha256 prefix>/``), so a wheel is
  downloaded once per machine; the gateway's prefix links to it.
- The gateway image runs ``python -m deploy.gateway.ui OUT`` at build time, which writes
  ``OUT/<entrypoint>/{site,licenses}`` (:data:`IMAGE_UI_ROOT` in the image).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import re
import shutil
import sys
import tempfile
import tomllib
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urljoin

import httpx

DEFAULT_UI_FILE = Path(__file__).resolve().parents[1] / "ui.toml"
# Where the gateway image keeps the UIs it unpacked (deploy/gateway/Dockerfile).
IMAGE_UI_ROOT = "/usr/share/platform/ui"
SITE = "site"
LICENSES = "licenses"
# The JSON form of the simple API (PEP 691); the HTML form is not read.
SIMPLE_JSON = "application/vnd.pypi.simple.v1+json"

_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
# A wheel's licence files: PEP 639's licenses/ folder and the older top-level names, and
# METADATA, whose License(-Expression) field is the only notice some wheels (zenml's) carry.
_LICENCE = re.compile(
    r"^[^/]+\.dist-info/(licenses/.+|(LICEN[CS]E|NOTICE|COPYING|AUTHORS)[^/]*|METADATA)$"
)
_CHUNK = 1 << 16


class UiError(Exception):
    """A UI's pin is invalid, or its wheel cannot be fetched, checked or unpacked."""


@dataclass(frozen=True)
class Pin:
    """One UI: the wheel it comes from and where it is served."""

    entrypoint: str
    title: str
    package: str
    version: str
    wheel: str
    sha256: str
    folder: str
    """The folder inside the wheel holding ``index.html``."""

    @property
    def key(self) -> str:
        """Names its unpacked copy: another pin (or a re-released file) is another copy."""
        return f"{self.package}-{self.version}-{self.sha256[:16]}"


@dataclass(frozen=True)
class Pins:
    index: str
    """The package index's simple API (``https://pypi.org/simple``)."""
    uis: tuple[Pin, ...]

    def for_entrypoint(self, name: str) -> Pin | None:
        return next((pin for pin in self.uis if pin.entrypoint == name), None)


def load_pins(path: Path = DEFAULT_UI_FILE) -> Pins:
    """The pins in ``path``; a missing or invalid file is one :class:`UiError` line."""
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise UiError(f"cannot read {path}: {exc}") from None
    index = raw.get("index")
    if not isinstance(index, str) or not index.startswith(("https://", "http://")):
        raise UiError(f"{path}: index must be an http(s) URL")
    entries = raw.get("ui", [])
    if not isinstance(entries, list):
        raise UiError(f"{path}: [[ui]] must be a list of tables")
    uis = tuple(_pin(entry, f"{path}: ui #{n}") for n, entry in enumerate(entries, 1))
    names = [pin.entrypoint for pin in uis]
    if len(set(names)) != len(names):
        raise UiError(f"{path}: an entrypoint has more than one UI")
    return Pins(index=index.rstrip("/"), uis=uis)


def _pin(raw: Any, where: str) -> Pin:
    fields = ("entrypoint", "title", "package", "version", "wheel", "sha256", "folder")
    if not isinstance(raw, dict) or set(raw) != set(fields):
        raise UiError(f"{where}: needs exactly the fields {', '.join(fields)}")
    if not all(isinstance(raw[name], str) and raw[name] for name in fields):
        raise UiError(f"{where}: every field is a non-empty string")
    pin = Pin(**{name: raw[name] for name in fields})
    for name in ("entrypoint", "package", "version", "wheel"):
        if not _NAME.match(getattr(pin, name)):
            raise UiError(f"{where}: {name} {getattr(pin, name)!r} is not a plain name")
    if not pin.wheel.endswith(".whl"):
        raise UiError(f"{where}: wheel {pin.wheel!r} is not a wheel file name")
    if not _SHA256.match(pin.sha256):
        raise UiError(f"{where}: sha256 must be 64 lower-case hex digits")
    folder = PurePosixPath(pin.folder)
    if folder.is_absolute() or ".." in folder.parts or folder.as_posix() != pin.folder:
        raise UiError(f"{where}: folder {pin.folder!r} is not a plain relative path")
    return pin


async def install(pin: Pin, index: str, dest: Path, client: httpx.AsyncClient) -> None:
    """Download ``pin``'s wheel from ``index`` and unpack its UI into ``dest`` (created;
    it must not exist). Any failure is a :class:`UiError` saying what and how to fix it,
    and leaves no ``dest``."""
    try:
        await asyncio.to_thread(dest.mkdir, parents=True)
    except OSError as exc:  # what is there is not ours to replace or remove
        raise UiError(f"cannot unpack the {pin.title} into {dest}: {exc.strerror}") from None
    try:
        wheel = dest / pin.wheel
        await _download(pin, index, wheel, client)
        await asyncio.to_thread(unpack, wheel, pin, dest)
        wheel.unlink()
    except BaseException:
        shutil.rmtree(dest, ignore_errors=True)
        raise


async def ensure_cached(pin: Pin, index: str, cache: Path, client: httpx.AsyncClient) -> Path:
    """``pin``'s unpacked UI under ``cache``, installed there first if missing. Copies are
    built in a private folder and renamed into place, so a copy found is complete, and
    two launchers filling the cache at once both end with the same one."""
    target = cache / pin.key
    if (target / SITE / "index.html").is_file():
        return target
    await asyncio.to_thread(cache.mkdir, parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(dir=cache, prefix=f".{pin.key}-"))
    try:
        await install(pin, index, building / "ui", client)
        try:
            (building / "ui").rename(target)
        except OSError:  # another launcher got there first
            if not (target / SITE / "index.html").is_file():
                raise
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return target


async def _download(pin: Pin, index: str, into: Path, client: httpx.AsyncClient) -> None:
    page = f"{index}/{pin.package}/"
    fix = f"check the network, or the pin in {DEFAULT_UI_FILE.name}"
    try:
        listing = await client.get(page, headers={"Accept": SIMPLE_JSON})
        listing.raise_for_status()
        files = listing.json().get("files", [])
        found = next(
            (f for f in files if isinstance(f, dict) and f.get("filename") == pin.wheel), None
        )
        if found is None or not isinstance(found.get("url"), str):
            raise UiError(f"{page} lists no {pin.wheel}; {fix}")
        async with client.stream("GET", urljoin(page, found["url"])) as response:
            response.raise_for_status()
            with into.open("wb") as out:
                async for chunk in response.aiter_bytes(_CHUNK):
                    out.write(chunk)
    except (httpx.HTTPError, ValueError, AttributeError) as exc:
        raise UiError(
            f"cannot download {pin.wheel} from {index}: {exc or type(exc).__name__}; {fix}"
        ) from None


def unpack(wheel: Path, pin: Pin, dest: Path) -> None:
    """Check ``wheel``'s sha256 against the pin, then write its UI folder to
    ``dest/site`` and its licence files to ``dest/licenses`` (paths inside the
    ``*.dist-info`` folder kept)."""
    digest = hashlib.sha256()
    with wheel.open("rb") as data:
        while chunk := data.read(_CHUNK):
            digest.update(chunk)
    if digest.hexdigest() != pin.sha256:
        raise UiError(
            f"{pin.wheel} has sha256 {digest.hexdigest()}, not the pinned {pin.sha256}: "
            f"refused; if {pin.package} {pin.version} was re-released, check it and pin the "
            f"new hash in {DEFAULT_UI_FILE.name}"
        )
    prefix = f"{pin.folder}/"
    try:
        with zipfile.ZipFile(wheel) as archive:
            for member in archive.infolist():
                name = member.filename
                if member.is_dir() or ".." in PurePosixPath(name).parts or name.startswith("/"):
                    continue
                if name.startswith(prefix):
                    out = dest / SITE / name[len(prefix) :]
                elif _LICENCE.match(name):
                    out = dest / LICENSES / name.split("/", 1)[1]
                else:
                    continue
                out.parent.mkdir(parents=True, exist_ok=True)
                with archive.open(member) as source, out.open("wb") as target:
                    shutil.copyfileobj(source, target, _CHUNK)
    except (zipfile.BadZipFile, OSError) as exc:
        raise UiError(f"cannot unpack {pin.wheel}: {exc}") from None
    if not (dest / SITE / "index.html").is_file():
        raise UiError(f"{pin.wheel} has no {pin.folder}/index.html; check the pin's folder")


def main(argv: list[str] | None = None) -> int:
    """``python -m deploy.gateway.ui OUT``: every pinned UI into ``OUT/<entrypoint>``."""
    parser = argparse.ArgumentParser(prog="python -m deploy.gateway.ui", description=__doc__)
    parser.add_argument("out", type=Path, help="the folder to write (must not exist)")
    parser.add_argument("--pins", type=Path, default=DEFAULT_UI_FILE)
    args = parser.parse_args(argv)

    async def install_all(pins: Pins) -> None:
        async with httpx.AsyncClient(timeout=60.0, follow_redirects=True) as client:
            for pin in pins.uis:
                await install(pin, pins.index, args.out / pin.entrypoint, client)
                print(f"{pin.title}: {pin.wheel} (sha256 checked) -> {args.out / pin.entrypoint}")

    try:
        asyncio.run(install_all(load_pins(args.pins)))
    except UiError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
