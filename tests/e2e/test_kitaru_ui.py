"""The kitaru UI in a real browser, used as people do, on the real stack at the agent
entrypoint's ``/``: the admin logs in through the form and invites a user without a
password; the user opens the activation link the UI shows, activates (which logs them
in), signs out and in again, makes API keys, sees the worker their key registered, approves
a device login and changes their password; the admin then deactivates them.

Each screen is checked by :class:`tests.support.browser.PageCheck` (no call failing that
the reference answers without an error there, no error screen, nothing spinning) and its
screenshot written under ``<basetemp>/screenshots/tests.e2e.test_kitaru_ui/``. The tests
run in order, the admin and the user each in a browser context of their own; what the
CLI or a worker would do (register a worker, start a device login) goes through the API
as they do. Requests leaving the machine are refused.
"""

from __future__ import annotations

import datetime as dt
import re
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser

from tests.support.browser import PageCheck, browser, person, screenshots  # noqa: F401 (fixtures)
from tests.support.processes import LaunchedStack, stack_for_tests

pytestmark = pytest.mark.e2e

ADMIN_PASSWORD = f"Ui-{secrets.token_urlsafe(12)}"
USER = "grace"
USER_PASSWORD = f"Ui-{secrets.token_urlsafe(12)}"
NEW_PASSWORD = f"Ui-{secrets.token_urlsafe(12)}"
# Where the survey leads: agents are not served here, and the gateway's 501 sentence shows
# on the UI's error screen in place of their list.
AGENTS = r"/api/v1/agents\b"
NOT_SERVED = "/api/v1/agents is not implemented by this server."
USER_ZONE_NAME, USER_ZONE = "Asia/Kolkata", dt.timezone(dt.timedelta(hours=5, minutes=30))


@pytest.fixture(scope="module")
def stack(
    tmp_path_factory: pytest.TempPathFactory, databases_of_stack: dict[str, str]
) -> Iterator[LaunchedStack]:
    with stack_for_tests(
        tmp_path_factory,
        "kitaru-ui",
        admin_password=None,
        databases=databases_of_stack,
        extra_env={"SERVER_DEFAULT_ACCOUNT_PASSWORD": ADMIN_PASSWORD},
    ) as up:
        yield up


@pytest.fixture(scope="module")
def admin(browser: Browser, screenshots: Path) -> Iterator[PageCheck]:  # noqa: F811
    """The admin's tab."""
    with person(browser, screenshots) as check:
        check.allow("GET", AGENTS, 501)
        yield check


@pytest.fixture(scope="module")
def user(browser: Browser, screenshots: Path) -> Iterator[PageCheck]:  # noqa: F811
    """The invited user's tab, in a browser 5:30 h east of UTC: the times the pages show
    are the server's UTC times in that zone (a time without its zone would be shown as
    local, 5:30 h off)."""
    with person(browser, screenshots, timezone_id=USER_ZONE_NAME) as check:
        check.allow("GET", AGENTS, 501)
        yield check


@pytest.fixture(scope="module")
def seen() -> dict[str, Any]:
    """What one step hands the next (the activation link, a key)."""
    return {}


def log_in(check: PageCheck, who: str, name: str, password: str) -> None:
    page = check.page
    page.wait_for_url(re.compile(r"/login\b"), wait_until="commit")
    check.visit(f"{who}: login", expect=["Sign in to Kitaru"])
    page.get_by_label("Username").fill(name)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(lambda url: "/login" not in url, wait_until="commit")


def take_the_survey(check: PageCheck, who: str, email: str) -> None:
    """A first visit asks about the person and their agent, then shows the agents page."""
    page = check.page
    check.visit(f"{who}: survey, about you", expect=["Tell us about yourself"])
    page.get_by_label("Work email").fill(email)
    page.get_by_role("button", name="Continue").click()
    check.visit(f"{who}: survey, codebase", expect=["Do you have an agent codebase?"])
    page.get_by_text("I have a codebase").click()
    page.get_by_role("button", name="Continue").click()
    check.visit(f"{who}: survey, framework", expect=["Which framework is the agent built on?"])
    page.get_by_text("PydanticAI").click()
    page.get_by_text("None yet").click()
    page.get_by_role("button", name="Continue").click()
    page.wait_for_url(re.compile(r"/agents$"), wait_until="commit")
    check.visit(f"{who}: agents", expect=[NOT_SERVED], error_screen=True)


def open_settings(check: PageCheck, section: str) -> None:
    """Through the user menu's Settings, then the section's link in the settings' menu."""
    page = check.page
    page.get_by_role("button", name="User menu").click()
    page.get_by_role("menuitem", name="Settings").click()
    page.wait_for_url(re.compile(r"/settings/"), wait_until="commit")
    page.get_by_role("link", name=section, exact=True).last.click()


def test_the_admin_logs_in_through_the_form_and_takes_the_survey(
    stack: LaunchedStack, admin: PageCheck
):
    admin.page.goto(stack.url("agent", "/"))
    log_in(admin, "admin", "default", ADMIN_PASSWORD)
    take_the_survey(admin, "admin", "ada@example.com")
    assert admin.page.url == stack.url("agent", "/agents")


def test_the_admin_invites_a_user_without_a_password_and_gets_its_activation_link(
    stack: LaunchedStack, admin: PageCheck, seen: dict[str, Any]
):
    page = admin.page
    open_settings(admin, "Members")
    admin.visit("admin: members", expect=["default"])
    page.get_by_role("button", name="Create User").click()
    dialog = page.get_by_role("dialog")
    dialog.get_by_label("Username").fill(USER)
    dialog.get_by_label("Email (optional)").fill("grace@example.com")
    dialog.get_by_role("button", name="Invite User").click()
    link = dialog.get_by_text(re.compile(r"/activate-user\?"))
    admin.visit("admin: user invited", expect=["User invited successfully"])
    seen["activation link"] = link.inner_text().strip()
    assert seen["activation link"].startswith(stack.url("agent", "/activate-user?user="))
    dialog.get_by_role("button", name="Close").first.click()
    row = page.get_by_role("row").filter(has_text=USER)
    assert "Inactive" in row.inner_text()


def test_the_user_activates_through_the_link_and_is_logged_in(
    stack: LaunchedStack, user: PageCheck, seen: dict[str, Any]
):
    page = user.page
    page.goto(seen["activation link"])
    user.visit("user: activation", expect=["Activate your user"])
    page.get_by_label("Password", exact=True).fill(USER_PASSWORD)
    page.get_by_label("Confirm password").fill(USER_PASSWORD)
    page.get_by_role("button", name="Activate User").click()
    # Activating logs in: the survey of a first visit follows, not the login form.
    page.wait_for_url(re.compile(r"/survey\b"), wait_until="commit")
    take_the_survey(user, "user", "grace@example.com")


def test_the_user_signs_out_and_logs_in_again_through_the_form(
    stack: LaunchedStack, user: PageCheck
):
    page = user.page
    page.get_by_role("button", name="User menu").click()
    page.get_by_role("menuitem", name="Sign out").click()
    log_in(user, "user", USER, USER_PASSWORD)
    page.wait_for_url(re.compile(r"/agents$"), wait_until="commit")
    user.visit("user: back in", expect=[NOT_SERVED], error_screen=True)


def create_api_key(check: PageCheck, name: str) -> str:
    """The key the creation dialog shows once; the dialog is closed after."""
    page = check.page
    page.get_by_role("button", name="Create API key").first.click()
    dialog = page.get_by_role("dialog")
    dialog.get_by_label("Name").fill(name)
    dialog.get_by_role("button", name="Create API key").click()
    check.visit(f"user: api key {name} shown once", expect=["Here is your new API key"])
    key = dialog.locator("code").first.inner_text().strip()
    dialog.get_by_role("button", name="Done").click()
    return key


def test_the_user_creates_api_keys_seen_once_then_deactivates_and_deletes_one(
    stack: LaunchedStack, user: PageCheck, seen: dict[str, Any]
):
    page = user.page
    open_settings(user, "API keys")
    user.visit("user: api keys, none yet", expect=["Create a new API key"])
    key = create_api_key(user, "ci-key")
    assert key.startswith("KITKEY_")
    seen["worker key"] = create_api_key(user, "worker-key")
    user.visit("user: api keys", expect=["ci-key", "worker-key"])
    assert key not in page.inner_text("body")  # shown once, never listed
    assert httpx.get(stack.url("agent", "/api/v1/accounts/me"), headers=_bearer(key)).is_success

    page.get_by_role("switch", name="Toggle active for ci-key").click()
    page.get_by_role("alertdialog").get_by_role("button", name="Deactivate").click()
    user.visit("user: api key deactivated")
    switch = page.get_by_role("switch", name="Toggle active for ci-key")
    assert switch.get_attribute("aria-checked") == "false"
    refused = httpx.get(stack.url("agent", "/api/v1/accounts/me"), headers=_bearer(key))
    assert refused.status_code == 401

    page.get_by_role("button", name="Open actions for ci-key").click()
    page.get_by_role("menuitem", name="Delete").click()
    confirm = page.get_by_role("alertdialog")
    confirm.get_by_role("textbox").fill("DELETE")
    confirm.get_by_role("button", name="Delete API key").click()
    page.get_by_text("ci-key", exact=True).wait_for(state="detached")
    user.visit("user: api key deleted", expect=["worker-key"])


def _bearer(credential: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {credential}"}


def test_the_worker_the_users_key_registered_shows_with_the_task_it_claimed(
    stack: LaunchedStack, user: PageCheck, seen: dict[str, Any]
):
    """The UI offers no worker creation (it names ``kitaru worker start``): the worker
    registers with the user's key, and claims an agent task the user queued, through the
    API as the CLI's worker does; the page lists it and its claimed task."""
    key = _bearer(seen["worker key"])
    with httpx.Client(base_url=stack.url("agent", ""), timeout=30) as api:
        registered = api.post("/api/v1/workers", headers=key, json={
            "name": "laptop-worker", "scope": {"claims": [{"kind": "agent"}]},
            "runtime": {"platform": "local", "hostname": "laptop", "os": "Linux",
                        "arch": "x86_64", "python_version": "3.11", "kitaru_version": "0.27.2"},
        })  # fmt: skip
        assert registered.status_code == 200, registered.text
        queued = api.post("/api/v1/tasks", headers=key, json={
            "kind": "agent", "timeout_seconds": 60, "run": {"command": "true"},
        })  # fmt: skip
        assert queued.status_code == 201, queued.text
        claimed = api.post("/api/v1/tasks/claim", headers=_bearer(registered.json()["token"]))
        assert [t["task"]["id"] for t in claimed.json()["tasks"]] == [queued.json()["id"]]
    # The task's row names its job by the id's last 8 hex digits: here the task's own.
    job = queued.json()["id"].replace("-", "")[-8:]
    created = dt.datetime.fromisoformat(registered.json()["worker"]["created"])
    registered_at = created.astimezone(USER_ZONE)
    shown = f"{registered_at:%b} {registered_at.day}, {registered_at:%Y, %H:%M:%S}"

    page = user.page
    page.goto(stack.url("agent", "/workers"))  # the home page's tab, hidden by agents' 501
    user.visit("user: workers", expect=["laptop-worker"])
    page.get_by_role("link", name="laptop-worker").click()
    user.visit("user: worker", expect=["Runtime", job, shown])

    # The key's "last used" is the registration's time, no longer "Never".
    open_settings(user, "API keys")
    user.visit("user: api key used")
    assert "Never" not in page.get_by_role("row").filter(has_text="worker-key").inner_text()


def test_the_user_approves_a_device_login_on_the_verification_page(
    stack: LaunchedStack, user: PageCheck
):
    """``kitaru login`` starts a device authorization and sends the person to its URL;
    the page shows what the device reported, and once approved the device logs in."""
    with httpx.Client(base_url=stack.url("agent", ""), timeout=30) as api:
        started = api.post("/api/v1/device_authorization", data={
            "hostname": "ada-laptop", "os": "Linux", "python_version": "3.11",
            "client_version": "0.27.2",
        })  # fmt: skip
        assert started.status_code == 200, started.text
        device = started.json()
        page = user.page
        page.goto(device["verification_uri_complete"])
        user.visit("user: device verification", expect=["Authorize a new device", "ada-laptop"])
        page.get_by_role("checkbox", name=re.compile("Trust this device")).click()
        page.get_by_role("button", name="Authorize This Device").click()
        page.wait_for_url(lambda url: "/devices/verify" not in url, wait_until="commit")
        user.visit("user: device approved", expect=[NOT_SERVED], error_screen=True)
        login = api.post("/api/v1/login", data={
            "grant_type": "urn:ietf:params:oauth:grant-type:device_code",
            "device_code": device["device_code"], "device_id": device["device_id"],
        })  # fmt: skip
        assert login.status_code == 200, login.text


def test_the_user_changes_their_password_on_the_profile_page(stack: LaunchedStack, user: PageCheck):
    page = user.page
    page.get_by_role("button", name="User menu").click()
    page.get_by_role("menuitem", name="Profile").click()
    user.visit("user: profile", expect=[USER, "grace@example.com"])
    page.get_by_label("Current password").fill(USER_PASSWORD)
    page.get_by_label("New password", exact=True).fill(NEW_PASSWORD)
    page.get_by_label("Confirm new password").fill(NEW_PASSWORD)
    page.get_by_role("button", name="Change password").click()
    user.visit("user: password changed", expect=["Password updated successfully"])
    # The session that changed it goes on; the new password logs in, the old one not.
    page.get_by_role("link", name="Members", exact=True).last.click()
    user.visit("user: members", expect=["default", USER])
    login = stack.url("agent", "/api/v1/login")
    for password, status in ((USER_PASSWORD, 401), (NEW_PASSWORD, 200)):
        answer = httpx.post(login, data={"username": USER, "password": password}, timeout=30)
        assert answer.status_code == status, answer.text


def test_the_admin_deactivates_the_user_on_the_members_page(stack: LaunchedStack, admin: PageCheck):
    page = admin.page
    page.get_by_role("button", name="Refresh").click()
    row = page.get_by_role("row").filter(has_text=USER)
    row.get_by_text("Active", exact=True).wait_for()
    admin.visit("admin: members, user active")
    page.get_by_role("button", name=f"Open actions for {USER}").click()
    page.get_by_role("menuitem", name="Deactivate account").click()
    page.get_by_role("alertdialog").get_by_role("button", name="Deactivate account").click()
    row.get_by_text("Inactive", exact=True).wait_for()
    admin.visit("admin: user deactivated")
    answer = httpx.post(stack.url("agent", "/api/v1/login"),
                        data={"username": USER, "password": NEW_PASSWORD}, timeout=30)  # fmt: skip
    assert answer.status_code == 401, answer.text
