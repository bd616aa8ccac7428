"""The ZenML dashboard in a real browser, used as a person does, on the real stack at the
platform entrypoint's ``/``, after the unmodified zenml client ran a real pipeline twice.

The client's run (``tests/compat/client_scenario.py``'s "pipeline runs" section: a two-step
pipeline on the default stack, the second run's steps cached) starts with the module, in a
thread beside the first login, and the walk waits for it where it needs the runs. The tests
run in order in one browser context, logged in by the first, and go where a user clicks:
the pipelines list, a run's DAG and logs, a step's details and logs, its output artifact,
the visualization and the download, the artifacts list, the component and stack wizards
(each registers one), a service account and its API key, a new member who activates
through the invitation link, an API token, a secret (created, shown, edited, deleted), and
every settings page (the Connectors page listing a connector registered through the API).

Each screen is checked by :class:`tests.support.browser.PageCheck` (no call failing that
the reference answers without an error there, no error screen, nothing spinning) and its
screenshot written under ``<basetemp>/screenshots/tests.e2e.test_zenml_dashboard/``.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, expect

from tests.compat.test_zenml_client import (
    USERNAME,
    check_scenario,
    run_scenario,
    zenml_client,  # noqa: F401 (fixture)
)
from tests.support.browser import PageCheck, browser, person, screenshots  # noqa: F401
from tests.support.processes import LaunchedStack, stack_for_tests
from tests.support.zenml_env import ZenmlVenv

# The first test's setup may build the client's environment (~1 min on a fresh machine,
# as in tests/compat) and start the stack.
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

ADMIN_PASSWORD = f"Ui-{secrets.token_urlsafe(12)}"
RAN = ("pipeline runs",)
# A connector the Connectors page lists (created through the API, with the page's cookie).
WALK_CONNECTOR_NAME = "walk-registry"
WALK_CONNECTOR = {
    "name": WALK_CONNECTOR_NAME,
    "connector_type": "docker",
    "auth_method": "password",
    "resource_types": ["docker-registry"],
    "configuration": {"username": "walk", "password": "walk-pass"},
}


@pytest.fixture(scope="module")
def stack(
    tmp_path_factory: pytest.TempPathFactory, databases_of_stack: dict[str, str]
) -> Iterator[LaunchedStack]:
    with stack_for_tests(
        tmp_path_factory,
        "zenml-dashboard",
        admin_password=ADMIN_PASSWORD,
        databases=databases_of_stack,
    ) as up:
        yield up


@pytest.fixture(scope="module")
def pipeline_runs(
    stack: LaunchedStack,
    zenml_client: ZenmlVenv,  # noqa: F811
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Future[dict[str, Any]]]:
    """The client's report of its two runs, as a future: the client runs while the browser
    logs in."""
    workdir = tmp_path_factory.mktemp("zenml-client")
    url = stack.url("platform", "")
    with ThreadPoolExecutor(max_workers=1) as pool:
        yield pool.submit(run_scenario, zenml_client, url, ADMIN_PASSWORD, workdir, RAN)


@pytest.fixture(scope="module")
def ran(pipeline_runs: Future[dict[str, Any]], stack: LaunchedStack) -> dict[str, Any]:
    """The client's report, once both runs are done and read back as the reference's."""
    report = pipeline_runs.result(timeout=300)
    check_scenario(report, f"our stack (gateway {stack.url('platform', '')})", RAN)
    return report


@pytest.fixture(scope="module")
def zenml(browser: Browser, screenshots: Path) -> Iterator[PageCheck]:  # noqa: F811
    """One person's tab on the ZenML dashboard."""
    with person(browser, screenshots) as check:
        yield check


def test_the_dashboard_logs_the_admin_in_through_its_form_and_takes_the_survey(
    stack: LaunchedStack, zenml: PageCheck, pipeline_runs: Future[dict[str, Any]]
):
    page = zenml.page
    page.goto(stack.url("platform", "/"))
    page.wait_for_url(re.compile(r"/login\b"), wait_until="commit")
    zenml.visit("login", expect=["Log in to your account"])
    page.get_by_label("Username").fill(USERNAME)
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
    # A new server greets with its onboarding checklist (a pipeline may be running yet).
    zenml.visit("onboarding", expect=["Get started", "Run a pipeline"])
    page.get_by_role("link").first.click()  # the logo: the dashboard's home
    zenml.visit("home", expect=["Overview"])


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
    zenml.visit(f"section {tab.lower()}")
    assert zenml.page.url == stack.url("platform", path)


def test_the_pipelines_list_leads_to_the_runs_and_a_runs_dag(
    stack: LaunchedStack, zenml: PageCheck, ran: dict[str, Any]
):
    page, pipeline = zenml.page, f"{ran['prefix']}-pipeline"
    page.get_by_role("tab", name="Projects", exact=True).first.click()
    zenml.visit("projects", expect=["1 pipelines", "2 runs"])
    page.locator('a[href="/projects/default/pipelines"]').first.click()  # the card
    zenml.visit("pipelines", expect=[pipeline])
    page.get_by_role("link", name=pipeline, exact=True).click()
    zenml.visit("pipeline's runs", expect=["#0001-", "#0002-"])
    # The first run ran both steps (the second's are cached): its DAG shows them and
    # their outputs.
    page.get_by_role("link", name=re.compile(r"^#0001-")).click()
    zenml.visit("run: DAG", expect=["compat_make_number", "compat_double", "Total Steps"])
    # A finished run cannot be stopped.
    expect(page.get_by_role("button", name="Stop", exact=True)).to_be_disabled()
    page.get_by_role("tab", name="Logs").first.click()  # the run's, beside its DAG
    zenml.visit("run: logs", expect=["Pipeline run has finished"])
    page.get_by_role("tab", name="Visualization").first.click()
    zenml.visit("run: DAG again", expect=["compat_double"])
    assert re.search(r"/projects/default/runs/[0-9a-f-]{36}\b", page.url), page.url


def test_a_steps_details_and_logs_open_from_the_dag(zenml: PageCheck, ran: dict[str, Any]):
    page, seed = zenml.page, len(ran["prefix"])
    page.get_by_text("compat_double", exact=True).first.click()
    zenml.visit("step: overview", expect=["Cache key"])
    sheet = page.get_by_role("dialog")
    for tab in ("Stack", "Code", "Configuration", "Metadata"):
        sheet.get_by_role("tab", name=tab).click()
        zenml.visit(f"step: {tab.lower()}")
    sheet.get_by_role("tab", name="Logs").click()
    # What the step printed, read back from the store through the server.
    zenml.visit("step: logs", expect=[f"doubling {seed}"])
    sheet.get_by_role("button", name="Close").click()
    expect(sheet).to_be_hidden()


def test_the_steps_output_artifact_and_its_visualization(zenml: PageCheck, ran: dict[str, Any]):
    page, seed = zenml.page, len(ran["prefix"])
    page.get_by_text("output", exact=True).last.click()  # compat_double's
    zenml.visit("artifact: overview", expect=["compat_double::output", "Artifact Store"])
    sheet = page.get_by_role("dialog")
    with page.expect_download() as download:  # the data, through a download token
        sheet.get_by_role("button", name="Download").click()
    assert download.value.failure() is None
    assert download.value.suggested_filename.endswith("__compat_double__output-1.tar.gz")
    zenml.visit("artifact: data downloaded")
    sheet.get_by_role("tab", name="Metadata").click()
    zenml.visit("artifact: metadata")
    sheet.get_by_role("tab", name="Visualization").click()
    zenml.visit("artifact: visualization warning", expect=["Load Preview"])
    sheet.get_by_role("button", name="Load Preview").click()
    zenml.visit("artifact: visualization", expect=[str(2 * seed)])
    sheet.get_by_role("button", name="Close").click()
    expect(sheet).to_be_hidden()


def test_the_artifacts_list_opens_from_the_projects_sidebar(zenml: PageCheck):
    zenml.page.locator('a[href="/projects/default/pipelines"]').first.click()  # breadcrumb
    zenml.visit("pipelines again")
    zenml.page.get_by_text("Artifacts", exact=True).first.click()
    zenml.visit("artifacts", expect=["zenml artifact list"])
    assert zenml.page.url.endswith("/projects/default/artifacts")


def test_the_models_page_opens_from_the_projects_sidebar(zenml: PageCheck):
    """The open-source dashboard's models page shows no models (ZenML Pro's): it names the
    CLI command, which lists ours (tests/compat's model scenario)."""
    zenml.page.get_by_text("Models", exact=True).first.click()
    zenml.visit("models", expect=["zenml model list"])
    assert zenml.page.url.endswith("/projects/default/models")


def test_the_component_wizard_registers_a_local_artifact_store(
    stack: LaunchedStack, zenml: PageCheck
):
    page = zenml.page
    page.get_by_role("link").first.click()  # the logo: out of the project, to the tabs
    page.get_by_role("tab", name="Components", exact=True).first.click()
    zenml.visit("components", expect=["New Component"])
    page.get_by_role("link", name="New Component").click()
    zenml.visit("component wizard: type", expect=["Select your Component Type"])
    page.get_by_text("Artifact Store", exact=True).click()
    zenml.visit("component wizard: flavor", expect=["Select your Artifact Store Flavor"])
    page.get_by_text("Local", exact=True).click()
    zenml.visit("component wizard: configure", expect=["Configure your Local Artifact Store"])
    page.locator("input[name=componentName]").fill("walk-store")
    page.locator("input[name=path]").fill(str(stack.data_dir / "walk-store"))
    page.get_by_role("button", name="Register Component").click()
    page.wait_for_url(re.compile(r"/components/[0-9a-f-]{36}$"), wait_until="commit")
    zenml.visit("component registered", expect=["walk-store", str(stack.data_dir / "walk-store")])


def test_the_stack_wizard_registers_a_stack_of_existing_components(zenml: PageCheck):
    page = zenml.page
    page.get_by_role("tab", name="Stacks", exact=True).first.click()
    zenml.visit("stacks", expect=["New Stack"])
    page.get_by_role("link", name="New Stack").click()
    zenml.visit("stack wizard", expect=["Manual Setup"])
    page.get_by_role("link", name=re.compile("^Manual Setup")).click()
    zenml.visit("stack wizard: manual", expect=["Add Components"])
    page.locator("input[name=stackName]").fill("walk-stack")
    page.get_by_text("Orchestrator", exact=True).click()
    zenml.visit("stack wizard: orchestrators", expect=["Select a existing orchestrator"])
    page.locator("label").filter(has_text="default").first.click()
    page.get_by_text("Artifact Store", exact=True).click()
    zenml.visit("stack wizard: artifact stores", expect=["walk-store"])
    page.locator("label").filter(has_text="walk-store").first.click()
    page.get_by_role("button", name="Register Stack").click()
    page.wait_for_url(re.compile(r"/stacks$"), wait_until="commit")
    zenml.visit("stack registered", expect=["walk-stack"])


def test_a_service_account_and_its_api_key_are_created_from_the_settings(zenml: PageCheck):
    page = zenml.page
    page.get_by_role("tab", name="Settings", exact=True).first.click()
    page.get_by_role("link", name="Service Accounts").click()
    zenml.visit("service accounts", expect=["Add service account"])
    page.get_by_role("button", name="Add service account").first.click()
    dialog = page.get_by_role("dialog")
    dialog.locator("input[name=name]").fill("walk-robot")
    dialog.locator("input[name=description]").fill("made by the browser walk")
    dialog.get_by_role("button", name="Add service account").click()
    zenml.visit("service account created", expect=["made by the browser walk"])
    page.get_by_text("walk-robot", exact=True).first.click()
    zenml.visit("service account", expect=["Generate API Key"])
    page.get_by_role("button", name="Generate API Key").click()
    dialog.locator("input[name=name]").fill("walk-key")
    dialog.get_by_role("button", name="Generate Key").click()
    zenml.visit("api key created", expect=["API Key Created Successfully", "ZENKEY_"])
    dialog.get_by_role("button", name="Close").first.click()
    zenml.visit("service account's keys", expect=["walk-key"])


def test_a_member_is_created_and_activates_through_the_invitation_link(
    stack: LaunchedStack,
    zenml: PageCheck,
    browser: Browser,  # noqa: F811
    screenshots: Path,  # noqa: F811
):
    page = zenml.page
    page.get_by_role("link", name="Members").click()
    zenml.visit("members", expect=["Add Member"])
    page.get_by_role("button", name="Add Member").click()
    dialog = page.get_by_role("dialog")
    dialog.locator("input[name=username]").fill("walk-member")
    dialog.get_by_role("button", name="Generate Token").click()
    prefix = stack.url("platform", "/activate-user?user=")
    zenml.visit("member created", expect=["was created successfully", prefix])
    invitation = dialog.get_by_text(prefix).first.inner_text().strip()
    dialog.get_by_role("button", name="Close").first.click()
    zenml.visit("members with the new one", expect=["walk-member", "Inactive"])
    # The member opens the link in a browser of their own, gives their details and a
    # password, takes the survey, and is logged in.
    (folder := screenshots / "walk-member").mkdir(exist_ok=True)
    with person(browser, folder) as member:
        member.page.goto(invitation)
        member.visit("invitation: details", expect=["Add your account details"])
        member.page.get_by_label("Name").fill("Walk Member")
        member.page.get_by_label("Email").fill("walk@example.com")
        member.page.get_by_role("button", name="Continue").click()
        member.visit("invitation: password", expect=["Create your password"])
        member.page.locator("input[name=newPassword]").fill("Walk-Pass-123!")
        member.page.locator("input[name=confirmPassword]").fill("Walk-Pass-123!")
        member.page.get_by_role("button", name="Continue").click()
        member.visit("invitation: about you", expect=["What best describes your primary role?"])
        member.page.get_by_text("Student").click()
        member.page.get_by_text("Not sure yet").click()
        member.page.get_by_role("button", name="Continue").click()
        member.visit("invitation: community", expect=["Join The ZenML Slack Community"])
        member.page.get_by_role("button", name="Skip this step").click()
        member.visit("invitation: done", expect=["username walk-member"])
    page.reload()
    zenml.visit("members, the new one active", expect=["walk-member"])
    assert "Inactive" not in page.inner_text("body")


def test_an_api_token_is_created_from_the_settings(zenml: PageCheck):
    page = zenml.page
    page.get_by_role("link", name="API Tokens").click()
    zenml.visit("api tokens", expect=["Create new token"])
    page.get_by_role("button", name="Create new token").first.click()
    zenml.visit("api token created", expect=["API Token Created Successfully"])
    page.get_by_role("dialog").get_by_role("button", name="Close").first.click()


def test_a_secret_is_created_shown_edited_and_deleted_from_the_settings(
    stack: LaunchedStack, zenml: PageCheck
):
    page = zenml.page
    page.get_by_role("main").get_by_role("link", name="Secrets", exact=True).click()
    page.wait_for_url(stack.url("platform", "/settings/secrets"), wait_until="commit")
    zenml.visit("secrets", expect=["Configure and manage your pipeline secrets"])
    page.get_by_role("button", name="New Secret").click()
    dialog = page.get_by_role("dialog")
    dialog.locator("input[name=secretName]").fill("walk-secret")
    dialog.locator("input[name='keysValues.0.key']").fill("username")
    dialog.locator("input[name='keysValues.0.value']").fill("walk-user")
    dialog.get_by_role("button", name="Register Secret").click()
    expect(dialog).to_be_hidden()
    zenml.visit("secret created", expect=["walk-secret"])
    # The list offers an admin's secret its actions (it reads the owner's is_admin).
    expect(page.get_by_role("button", name="Open secret actions")).to_have_count(1)
    # Its page lists the keys, each value hidden until its eye is clicked.
    page.get_by_role("link", name="walk-secret", exact=True).click()
    zenml.visit("secret", expect=["Edit Keys", "username"])
    assert "walk-user" not in page.inner_text("main")
    page.get_by_role("button", name="Show value").click()
    expect(page.get_by_role("button", name="walk-user", exact=True)).to_be_visible()
    # Edit Keys: a second key beside the first.
    page.get_by_role("button", name="Edit Keys").click()
    form = page.locator("#edit-secret-form")
    expect(form.locator("input[name='keysValues.0.value']")).to_have_value("walk-user")
    form.locator("button[type=button]").last.click()  # the last row's "+"
    form.locator("input[name='keysValues.1.key']").fill("password")
    form.locator("input[name='keysValues.1.value']").fill("walk-pass")
    page.get_by_role("button", name="Save Secret").click()
    zenml.visit("secret edited", expect=["Secret updated successfull"])
    page.get_by_role("dialog").get_by_role("button", name="Cancel").click()  # it stays open
    expect(page.get_by_role("dialog")).to_be_hidden()
    zenml.visit("secret with two keys", expect=["username", "password"])
    added = page.get_by_role("row").filter(has_text="password")
    added.get_by_role("button", name="Show value").click()
    expect(added.get_by_role("button", name="walk-pass", exact=True)).to_be_visible()
    # Back to the list (the breadcrumb), where its actions delete it after a confirmation.
    page.get_by_role("banner").get_by_role("link", name="Secrets", exact=True).click()
    zenml.visit("secrets again", expect=["walk-secret"])
    page.get_by_role("button", name="Open secret actions").click()
    page.get_by_role("menuitem", name="Delete").click()
    confirm = page.get_by_role("alertdialog").or_(page.get_by_role("dialog"))
    expect(confirm.get_by_text("Are you sure?")).to_be_visible()
    confirm.locator("input[name=delete]").fill("DELETE")  # "Please type DELETE to confirm"
    confirm.get_by_role("button", name="Delete").click()
    expect(page.get_by_role("link", name="walk-secret", exact=True)).to_have_count(0)
    zenml.visit("secret deleted", expect=["New Secret"])


# The sidebar's other five (General, Members, API Tokens, Service Accounts, Notifications)
# are walked by the tests that use them.
@pytest.mark.parametrize(
    ("link", "path"),
    [
        ("Secrets", "/settings/secrets"),
        ("Connectors", "/settings/connectors"),
        ("MCP", "/settings/mcp"),
        ("Profile", "/settings/profile"),
    ],
)
def test_each_other_settings_page_opens_from_the_settings_sidebar(
    stack: LaunchedStack, zenml: PageCheck, link: str, path: str
):
    expected: list[str] = []
    if link == "Connectors":
        created = zenml.page.request.post(
            stack.url("platform", "/api/v1/service_connectors"), data=WALK_CONNECTOR
        )
        assert created.ok, created.text()
        expected = [WALK_CONNECTOR_NAME]
    # The sidebar's link (a breadcrumb may name the page shown too).
    zenml.page.get_by_role("main").get_by_role("link", name=link, exact=True).click()
    zenml.page.wait_for_url(stack.url("platform", path), wait_until="commit")
    zenml.visit(f"settings: {link.lower()}", expect=expected)


@pytest.mark.parametrize(
    ("link", "path"),
    [
        ("Repositories", "/projects/default/settings/repositories"),
        ("Profile", "/projects/default/settings/profile"),
    ],
)
def test_each_project_settings_page_opens_from_the_projects_sidebar(
    stack: LaunchedStack, zenml: PageCheck, link: str, path: str
):
    page = zenml.page
    if "/projects/default/settings/" not in page.url:
        page.get_by_role("tab", name="Projects", exact=True).first.click()
        page.locator('a[href="/projects/default/pipelines"]').first.click()
        zenml.visit("project's pipelines")
        page.get_by_text("Settings", exact=True).last.click()
    page.get_by_role("link", name=link, exact=True).last.click()
    page.wait_for_url(stack.url("platform", path), wait_until="commit")
    zenml.visit(f"project settings: {link.lower()}")


def test_the_servers_name_and_notifications_are_changed_from_the_settings(zenml: PageCheck):
    page = zenml.page
    page.get_by_role("link").first.click()  # the logo: out of the project, to the tabs
    page.get_by_role("tab", name="Settings", exact=True).first.click()
    zenml.visit("settings: general", expect=["Server Name"])
    page.locator("input[name=serverName]").fill("walked")
    page.get_by_role("button", name="Update").click()
    zenml.visit("server renamed", expect=["walked"])
    page.get_by_role("link", name="Notifications", exact=True).click()
    switch = page.get_by_role("switch").first
    assert switch.get_attribute("aria-checked") == "false"  # announcements: off by default
    switch.click()
    zenml.visit("announcements on")
    page.reload()
    zenml.visit("notifications reloaded", expect=["Announcements"])
    assert page.get_by_role("switch").first.get_attribute("aria-checked") == "true"
