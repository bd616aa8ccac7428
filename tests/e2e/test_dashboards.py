"""The two web UIs in a real browser, used as a person does, on the real stack: the ZenML
dashboard at the platform entrypoint's ``/`` and the kitaru UI at the agent entrypoint's.

Each screen is checked by :class:`tests.support.browser.PageCheck` (no call failing that
the reference answers without an error there, no error screen, nothing spinning) and its
screenshot written under ``<basetemp>/screenshots/tests.e2e.test_dashboards/``. The tests
of a UI run in order in one browser context, logged in by the first. Requests leaving the
machine (the dashboard's avatars and template pictures) are refused: the test needs no
internet, and they are no call of ours.
"""

from __future__ import annotations

import contextlib
import re
import secrets
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Route

from tests.support.browser import PageCheck, browser, screenshots  # noqa: F401 (fixtures)
from tests.support.processes import LaunchedStack, stack_for_tests

pytestmark = pytest.mark.e2e

ADMIN_PASSWORD = f"Ui-{secrets.token_urlsafe(12)}"
AGENT_PASSWORD = f"Ui-{secrets.token_urlsafe(12)}"
# The stack's own origins, and what a page makes without the network (an empty frame).
# Where the kitaru UI keeps its access token (its build's local-storage key).
TOKEN_KEY = "kitaru.local-storage.access-token"
NOT_SERVED = "/api/v1/agents is not implemented by this server."
LOCAL = re.compile(r"^(https?://127\.0\.0\.1[:/]|about:|data:|blob:)")


@pytest.fixture(scope="module")
def stack(
    tmp_path_factory: pytest.TempPathFactory, databases_of_stack: dict[str, str]
) -> Iterator[LaunchedStack]:
    with stack_for_tests(
        tmp_path_factory,
        "dashboards",
        admin_password=ADMIN_PASSWORD,
        databases=databases_of_stack,
        extra_env={"SERVER_DEFAULT_ACCOUNT_PASSWORD": AGENT_PASSWORD},
    ) as up:
        yield up


@contextlib.contextmanager
def person(browser: Browser, screenshots: Path) -> Iterator[PageCheck]:  # noqa: F811
    """A fresh browser context (no cookies) whose requests off this machine are refused."""
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


@pytest.fixture(scope="module")
def zenml(browser: Browser, screenshots: Path) -> Iterator[PageCheck]:  # noqa: F811
    """One person's tab on the ZenML dashboard."""
    with person(browser, screenshots) as check:
        yield check


@pytest.fixture(scope="module")
def kitaru(browser: Browser, screenshots: Path) -> Iterator[PageCheck]:  # noqa: F811
    """One person's tab on the kitaru UI."""
    with person(browser, screenshots) as check:
        yield check


def test_the_dashboard_logs_the_admin_in_through_its_form_and_takes_the_survey(
    stack: LaunchedStack, zenml: PageCheck
):
    page = zenml.page
    page.goto(stack.url("platform", "/"))
    page.wait_for_url(re.compile(r"/login\b"), wait_until="commit")
    zenml.visit("dashboard login", expect=["Log in to your account"])
    page.get_by_label("Username").fill("default")
    page.get_by_label("Password").fill(ADMIN_PASSWORD)
    page.get_by_role("button", name="Login").click()
    # A first login asks for the account's details, two questions and the community,
    # confirms, and then shows the dashboard.
    page.wait_for_url(re.compile(r"/survey\b"), wait_until="commit")
    zenml.visit("survey: account details", expect=["Add your account details"])
    page.get_by_label("Name").fill("Ada Admin")
    page.get_by_label("Email").fill("ada@example.com")
    page.get_by_role("button", name="Continue").click()
    zenml.visit("survey: about you", expect=["What best describes your primary role?"])
    page.get_by_text("ML Engineer").click()
    page.get_by_text("My Laptop").click()
    page.get_by_role("button", name="Continue").click()
    zenml.visit("survey: community", expect=["Join The ZenML Slack Community"])
    page.get_by_role("button", name="Skip this step").click()
    zenml.visit("survey: done", expect=["Your ZenML account is now updated"])
    page.get_by_role("link", name="Go to Dashboard").click()
    page.wait_for_url(lambda url: "/survey" not in url, wait_until="commit")
    # Where nothing has run yet, the dashboard greets with its onboarding checklist.
    zenml.visit("dashboard onboarding", expect=["Get started", "Run a pipeline"])
    page.get_by_role("link").first.click()  # the logo: the dashboard's home
    zenml.visit("dashboard home", expect=["Overview"])


@pytest.mark.parametrize(
    ("tab", "path"),
    [
        ("Overview", "/"),
        ("Projects", "/projects"),
        ("Stacks", "/stacks"),
        ("Components", "/components"),
        ("Settings", "/settings/general"),
    ],
)
def test_each_section_of_the_dashboard_opens_from_its_tab(
    stack: LaunchedStack, zenml: PageCheck, tab: str, path: str
):
    zenml.page.get_by_role("tab", name=tab, exact=True).first.click()
    zenml.visit(f"dashboard {tab.lower()}")
    assert zenml.page.url == stack.url("platform", path)


def test_the_kitaru_ui_logs_the_admin_in_through_its_form(stack: LaunchedStack, kitaru: PageCheck):
    page = kitaru.page
    page.goto(stack.url("agent", "/"))
    page.wait_for_url(re.compile(r"/login\b"), wait_until="commit")
    kitaru.visit("kitaru login", expect=["Sign in to Kitaru"])
    page.get_by_label("Username").fill("default")
    page.get_by_label("Password").fill(AGENT_PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(lambda url: "/login" not in url, wait_until="commit")
    kitaru.visit("kitaru home")


def test_a_kitaru_page_outside_accounts_shows_the_gateways_sentence(
    stack: LaunchedStack,
    browser: Browser,  # noqa: F811
    screenshots: Path,  # noqa: F811
):
    """Agents are not served here: the gateway answers their family 501 with a sentence,
    which the page shows on the UI's error screen in place of its list. Logged in with a
    token the API gave (the UI keeps it in local storage), not through the form, which
    the test above walks."""
    login = httpx.post(
        stack.url("agent", "/api/v1/login"),
        data={"grant_type": "password", "username": "default", "password": AGENT_PASSWORD},
        timeout=30,
    )
    assert login.status_code == 200, login.text
    with person(browser, screenshots) as check:
        check.allow("GET", r"/api/v1/agents\b", 501)
        page = check.page
        page.add_init_script(
            f"localStorage.setItem({TOKEN_KEY!r}, {login.json()['access_token']!r})"
        )
        page.goto(stack.url("agent", "/agents"))
        # A first visit asks about the person and their agent first.
        check.visit("kitaru survey: about you", expect=["Tell us about yourself"])
        page.get_by_label("Work email").fill("ada@example.com")
        page.get_by_role("button", name="Continue").click()
        check.visit("kitaru survey: codebase", expect=["Do you have an agent codebase?"])
        page.get_by_text("I have a codebase").click()
        page.get_by_role("button", name="Continue").click()
        check.visit("kitaru survey: framework", expect=["Which framework is the agent built on?"])
        page.get_by_text("PydanticAI").click()
        page.get_by_text("None yet").click()
        page.get_by_role("button", name="Continue").click()
        check.visit("kitaru agents", expect=[NOT_SERVED], error_screen=True)
        assert page.url == stack.url("agent", "/agents")
