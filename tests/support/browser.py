"""Chromium driven by Playwright, for the tests that use the web UIs as a person does.

:func:`find_chromium` takes a Chromium on ``PATH`` (Debian's ``chromium`` package, which
``make`` installs as root when none is found) or else Playwright's own download. It is
started with WebGL and the 3D APIs off: in software rendering the kitaru UI's WebGL
backgrounds take ~30 s a page.

:class:`PageCheck` watches one page as :meth:`PageCheck.visit` reaches each screen: a
screen passes when no call it made got a 4xx/5xx the test did not name as the
reference's own answer there, no error screen shows and nothing still spins once the
network is quiet (no request in flight for half a second); its screenshot is written
under the test run's base temporary folder (``<basetemp>/screenshots/``), for a person
to look at.

``python -m tests.support.browser`` exits 0 when a Chromium is found (the Makefile's
``chromium`` target asks before installing one).
"""

from __future__ import annotations

import contextlib
import re
import shutil
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, Request, Response, Route, sync_playwright
from playwright.sync_api import Error as PlaywrightError

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")
LAUNCH_ARGS = ("--disable-3d-apis", "--disable-webgl")
# How long a screen may take to become quiet (no request for QUIET_SECONDS) before the
# test fails: far above what a page of the local stack takes (under 2 s here).
SETTLE_TIMEOUT_MS = 30_000
QUIET_SECONDS = 0.5
# What the two UIs show when a page fails, and what spins while they wait.
ERROR_SCREENS = re.compile(
    r"Something went wrong|There was an error|Unexpected Application Error", re.I
)
SPINNERS = "[role=progressbar], .animate-spin, [aria-busy=true]"
# A progress bar is a spinner only while it animates: the onboarding checklist's bar at 0/3
# is an indeterminate progressbar that stands still.
MOVING = "e => !e.matches('[role=progressbar]') || e.getAnimations({subtree: true}).length > 0"
# The stack's own origins, and what a page makes without the network (an empty frame).
LOCAL = re.compile(r"^(https?://127\.0\.0\.1[:/]|about:|data:|blob:)")


def find_chromium() -> str | None:
    """The Chromium executable to drive, or ``None``."""
    for name in CHROMIUM_NAMES:
        if found := shutil.which(name):
            return found
    with sync_playwright() as playwright:
        own = playwright.chromium.executable_path
    return own if Path(own).is_file() else None


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Chromium for a test module (never skipped: ``make`` provides one)."""
    executable = find_chromium()
    assert executable, f"no Chromium ({', '.join(CHROMIUM_NAMES)}); run `make chromium`"
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=list(LAUNCH_ARGS))
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture(scope="module")
def screenshots(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Path:
    """Where a module's screenshots go: ``<basetemp>/screenshots/<module>/``."""
    folder: Path = tmp_path_factory.getbasetemp() / "screenshots" / request.module.__name__
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@contextlib.contextmanager
def person(browser: Browser, screenshots: Path) -> Iterator[PageCheck]:
    """A fresh browser context (no cookies) whose requests off this machine are refused:
    the tests need no internet, and the UIs' avatars and template pictures are no call of
    ours."""
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    # A control that never shows fails its step in this time, not Playwright's 30 s.
    context.set_default_timeout(15_000)

    def only_local(route: Route) -> None:
        if LOCAL.match(route.request.url):
            route.continue_()
        else:
            route.abort()

    context.route("**/*", only_local)
    try:
        yield PageCheck(context.new_page(), screenshots)
    finally:
        context.close()


@dataclass
class PageCheck:
    """One browser page and what it has seen go wrong since the last screen passed."""

    page: Page
    screenshots: Path
    failed: list[str] = field(default_factory=list)
    allowed: list[Callable[[Response], bool]] = field(default_factory=list)
    _count: int = 0

    _pending: set[Request] = field(default_factory=set)
    _changed: float = 0.0

    def __post_init__(self) -> None:
        self.page.on("response", self._answered)
        self.page.on("request", self._started)
        self.page.on("requestfinished", self._ended)
        self.page.on("requestfailed", self._ended)

    def _started(self, request: Request) -> None:
        self._pending.add(request)
        self._changed = time.monotonic()

    def _ended(self, request: Request) -> None:
        self._pending.discard(request)
        self._changed = time.monotonic()

    def _settle(self, name: str) -> None:
        """Until no request has been in flight for :data:`QUIET_SECONDS` (Playwright's
        ``networkidle`` is per navigation, and a single-page app navigates without one)."""
        deadline = time.monotonic() + SETTLE_TIMEOUT_MS / 1000
        while self._pending or time.monotonic() - self._changed < QUIET_SECONDS:
            if time.monotonic() > deadline:
                pending = sorted(r.url for r in self._pending)
                raise AssertionError(
                    f"{name}: still loading after {SETTLE_TIMEOUT_MS} ms: {pending}"
                )
            self.page.wait_for_timeout(100)  # lets Playwright deliver the page's events

    def _answered(self, response: Response) -> None:
        # Answered is done: a body the page never reads may never "finish".
        self._ended(response.request)
        if response.status >= 400 and not any(allow(response) for allow in self.allowed):
            self.failed.append(f"{response.request.method} {response.url} -> {response.status}")

    def allow(self, method: str, path: str, status: int) -> None:
        """A call the reference answers ``status`` too at this point (an expected 401
        before login, say): not a failure of the screen."""
        pattern = re.compile(path)

        def matches(response: Response) -> bool:
            return (
                response.request.method == method
                and response.status == status
                and pattern.search(response.url) is not None
            )

        self.allowed.append(matches)

    def visit(self, name: str, *, expect: Iterable[str] = (), error_screen: bool = False) -> None:
        """The screen now shown: wait until the network is quiet, write its screenshot,
        then fail on an unexpected error answer, an error screen (unless ``error_screen``:
        the right answer where the server serves nothing), a spinner still spinning or a
        missing ``expect`` text."""
        for text in expect:
            try:
                self.page.get_by_text(text).first.wait_for(timeout=SETTLE_TIMEOUT_MS)
            except PlaywrightError as exc:
                self._screenshot(name)
                raise AssertionError(f"{name}: {text!r} never showed") from exc
        self._settle(name)
        self._screenshot(name)
        failed, self.failed = self.failed, []
        assert failed == [], f"{name}: calls failed: {failed}"
        body = self.page.inner_text("body")
        shown = ERROR_SCREENS.search(body) is not None
        assert shown == error_screen, f"{name}: error screen {shown}: {body[:500]}"
        spinning = [
            s for s in self.page.locator(SPINNERS).all() if s.is_visible() and s.evaluate(MOVING)
        ]
        assert spinning == [], f"{name}: {len(spinning)} spinner(s) still spin: " + "; ".join(
            s.evaluate("e => e.outerHTML")[:300] for s in spinning
        )

    def _screenshot(self, name: str) -> None:
        self._count += 1
        slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
        self.page.screenshot(path=self.screenshots / f"{self._count:02d}-{slug}.png")


if __name__ == "__main__":
    sys.exit(0 if find_chromium() else 1)
