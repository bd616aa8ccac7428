"""The kitaru UI in a real browser, used as a person does, on the real stack, at the agent
entrypoint's ``/`` (the ZenML dashboard's walk is ``test_zenml_dashboard.py``).

Each screen is checked by :class:`tests.support.browser.PageCheck` (no call failing that
the reference answers without an error there, no error screen, nothing spinning) and its
screenshot written under ``<basetemp>/screenshots/tests.e2e.test_dashboards/``. The tests
run in order in one browser context, logged in by the first. Requests leaving the machine
are refused (:func:`tests.support.browser.person`).
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser

from tests.support.browser import PageCheck, browser, person, screenshots  # noqa: F401
from tests.support.processes import LaunchedStack, stack_for_tests

pytestmark = pytest.mark.e2e

AGENT_PASSWORD = f"Ui-{secrets.token_urlsafe(12)}"
# Where the kitaru UI keeps its access token (its build's local-storage key).
TOKEN_KEY = "kitaru.local-storage.access-token"
NOT_SERVED = "/api/v1/agents is not implemented by this server."


@pytest.fixture(scope="module")
def stack(
    tmp_path_factory: pytest.TempPathFactory, databases_of_stack: dict[str, str]
) -> Iterator[LaunchedStack]:
    with stack_for_tests(
        tmp_path_factory,
        "dashboards",
        admin_password=f"Ui-{secrets.token_urlsafe(12)}",
        databases=databases_of_stack,
        extra_env={"SERVER_DEFAULT_ACCOUNT_PASSWORD": AGENT_PASSWORD},
    ) as up:
        yield up


@pytest.fixture(scope="module")
def kitaru(browser: Browser, screenshots: Path) -> Iterator[PageCheck]:  # noqa: F811
    """One person's tab on the kitaru UI."""
    with person(browser, screenshots) as check:
        yield check


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
