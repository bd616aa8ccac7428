"""The ZenML dashboard in a real browser, used as a person does, on the real stack, at the
platform entrypoint's ``/`` (the kitaru UI's walk is ``test_kitaru_ui.py``).

Each screen is checked by :class:`tests.support.browser.PageCheck` (no call failing that
the reference answers without an error there, no error screen, nothing spinning) and its
screenshot written under ``<basetemp>/screenshots/tests.e2e.test_dashboards/``. The tests
run in order in one browser context, logged in by the first. Requests leaving the
machine (the dashboard's avatars and template pictures) are refused: the test needs no
internet, and they are no call of ours.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser

from tests.support.browser import PageCheck, browser, person, screenshots  # noqa: F401 (fixtures)
from tests.support.processes import LaunchedStack, stack_for_tests

pytestmark = pytest.mark.e2e

ADMIN_PASSWORD = f"Ui-{secrets.token_urlsafe(12)}"


@pytest.fixture(scope="module")
def stack(
    tmp_path_factory: pytest.TempPathFactory, databases_of_stack: dict[str, str]
) -> Iterator[LaunchedStack]:
    with stack_for_tests(
        tmp_path_factory,
        "dashboards",
        admin_password=ADMIN_PASSWORD,
        databases=databases_of_stack,
    ) as up:
        yield up


@pytest.fixture(scope="module")
def zenml(browser: Browser, screenshots: Path) -> Iterator[PageCheck]:  # noqa: F811
    """One person's tab on the ZenML dashboard."""
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
