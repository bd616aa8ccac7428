"""The unmodified zenml 0.96.3 client against our stack (and, on request, the reference).

The client runs in its own cached environment (``tests/support/zenml_env.py``; built on first
use, ~15 s with pip) and executes ``client_scenario.py``: log in as ``default`` with
username/password through the gateway's platform port, list/create/get/rename/tag/delete
artifacts, create an artifact version under a new artifact name and read it by id and by
name, create/read/update/delete a code repository, run a two-step pipeline twice on the
default stack (local orchestrator; the second run's steps cached) and read the runs back
through the API, the step logs and ``zenml pipeline runs list``, run a tagged pipeline whose
step logs metadata and tag and annotate it from outside, and log in with a service account's
API key (``zenml login --api-key``) before and after rotating and deactivating it. The
scenario reports what each call returned; this module checks the values.

``test_against_reference`` runs the same scenario against the real ZenML 0.96.3 server
(``zenml[server]`` in a second cached environment) to prove the harness and the expectations;
it is skipped unless ``COMPAT_REFERENCE=1``.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from shared.errors import NO_SUCH_ENDPOINT
from tests.support.processes import LaunchedStack, port_free, stack_for_tests
from tests.support.zenml_env import (
    CLIENT_VERSION,
    ZenmlEnvError,
    ZenmlVenv,
    client_environment,
    client_venv,
    reference_server,
    run_snippet,
    server_venv,
)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

SCENARIO = Path(__file__).with_name("client_scenario.py")
ADMIN_PASSWORD = f"Compat-{secrets.token_urlsafe(12)}"
USERNAME = "default"


@pytest.fixture(scope="module")
def zenml_client() -> ZenmlVenv:
    try:
        return client_venv()
    except ZenmlEnvError as exc:
        pytest.fail(f"zenml client environment: {exc}", pytrace=False)


@pytest.fixture(scope="module")
def stack(
    tmp_path_factory: pytest.TempPathFactory, databases_of_stack: dict[str, str]
) -> Iterator[LaunchedStack]:
    with stack_for_tests(
        tmp_path_factory,
        "compat-stack",
        admin_password=ADMIN_PASSWORD,
        databases=databases_of_stack,
    ) as up:
        yield up


# What our stack serves (the reference runs every section).
OUR_SECTIONS = (
    "artifacts",
    "artifact versions",
    "code repositories",
    "pipeline runs",
    "tags and metadata",
    "service accounts",
)


def run_client_snippet(
    client: ZenmlVenv,
    store_url: str,
    password: str,
    workdir: Path,
    scenario: str,
    what: str,
    *,
    timeout: float = 600.0,
    filename: str = "snippet.py",
    extra: Mapping[str, str] | None = None,
) -> Any:
    """What ``scenario`` emitted, run by one client process logged in to ``store_url`` as
    the admin, with ``extra`` in its environment. zenml's default verbosity (below it a
    step's printed output is not logged at all, and a scenario may read a step's logs
    back); Rich's tables as wide as their values."""
    env = client_environment(
        store_url=store_url,
        username=USERNAME,
        password=password,
        config_dir=workdir,
        verbosity="INFO",
        extra={"COLUMNS": "200", **(extra or {})},
    )
    try:
        return run_snippet(
            client.python, scenario, env=env, cwd=workdir, timeout=timeout, filename=filename
        ).value
    except ZenmlEnvError as exc:
        pytest.fail(f"the {what} scenario did not report: {exc}", pytrace=False)


def run_scenario(
    client: ZenmlVenv,
    store_url: str,
    password: str,
    workdir: Path,
    sections: tuple[str, ...] | None = None,
) -> Any:
    """Run ``client_scenario.py`` against ``store_url`` (``sections`` only, when given);
    its JSON report."""
    return run_client_snippet(
        client,
        store_url,
        password,
        workdir,
        SCENARIO.read_text(),
        "client",
        timeout=300,
        filename=SCENARIO.name,
        extra=None if sections is None else {"COMPAT_SECTIONS": ",".join(sections)},
    )


def describe_failure(failure: dict[str, Any]) -> str:
    """The failed call, the client's exception and the server's answers."""
    lines = [
        f"[{failure['section']}] step {failure['step']!r} failed",
        f"  call:  {failure['call']}",
        f"  error: {failure['error']}",
        "  last HTTP exchanges (newest last):",
    ]
    for exchange in failure.get("http") or []:
        lines.append(f"    {exchange['method']} {exchange['url']} -> {exchange['status']}")
        lines.append(f"      {exchange['body'][:600]}")
    if not failure.get("http"):
        lines.append("    (none)")
    if failure["step"] == "(outside any client call)":
        lines.append("  traceback (tail):")
        lines.extend("    " + line for line in failure.get("traceback", "").splitlines()[-8:])
    return "\n".join(lines)


def check_connect(steps: dict[str, Any], prefix: str) -> None:
    connect = steps["connect"]
    assert connect["user"] == USERNAME
    assert connect["project"] == "default"
    assert connect["stack"] == "default"


def check_artifacts(steps: dict[str, Any], prefix: str, project_id: str) -> None:
    listed = steps["list artifacts"]
    assert listed["index"] == 1
    assert not [n for n in listed["names"] if n.startswith(prefix)]

    created = steps["create artifact"]
    assert created["name"] == f"{prefix}-artifact"
    assert created["project_id"] == project_id
    assert created["user"] == USERNAME
    assert created["tags"] == ["compat"]
    assert created["has_custom_name"] is False
    assert created["latest_version_id"] is None
    assert created["latest_version_name"] is None
    assert steps["get artifact by name"] == created
    assert steps["get artifact by id"] == created
    assert steps["list artifacts by prefix"] == {"total": 1, "names": [f"{prefix}-artifact"]}

    updated = steps["update artifact"]
    assert updated["id"] == created["id"]
    assert updated["name"] == f"renamed-{prefix}"
    assert updated["tags"] == ["renamed"]
    assert updated["has_custom_name"] is True  # a rename marks the name as custom
    assert updated["project_id"] == project_id
    assert updated["user"] == USERNAME
    renamed = steps["get renamed artifact"]
    assert renamed["renamed"] == updated
    assert renamed["old_name"]["raised"] == "KeyError", renamed["old_name"]

    deleted = steps["delete artifact"]
    assert deleted["get_after"]["raised"] == "KeyError", deleted
    assert deleted["left"] == 0


def check_artifact_versions(steps: dict[str, Any], prefix: str, project_id: str) -> None:
    version = steps["create artifact version"]
    assert version["version"] == "1"
    assert version["artifact_name"] == f"{prefix}-versioned"
    assert version["project_id"] == project_id
    assert version["user"] == USERNAME
    assert version["tags"] == ["compat-version"]
    assert version["type"] == "DataArtifact"
    assert version["save_type"] == "external"
    assert version["uri"] == f"/tmp/{prefix}/data"

    versioned = steps["get versioned artifact by name"]
    assert versioned["id"] == version["artifact_id"]
    assert versioned["name"] == f"{prefix}-versioned"
    assert versioned["project_id"] == project_id
    assert versioned["user"] == USERNAME
    assert versioned["latest_version_name"] == "1"
    assert versioned["latest_version_id"] == version["id"]
    assert versioned["tags"] == []  # the version's tags are not the artifact's
    assert steps["get artifact version by name"] == {"id": version["id"], "version": "1"}
    assert steps["get artifact version by id"] == {
        "id": version["id"],
        "version": "1",
        "artifact_name": f"{prefix}-versioned",
        "tags": ["compat-version"],
    }

    deleted = steps["delete versioned artifact"]
    assert deleted["get_artifact_after"]["raised"] == "KeyError", deleted
    assert deleted["get_version_after"]["raised"] == "KeyError", deleted  # cascaded


def check_code_repositories(steps: dict[str, Any], prefix: str, project_id: str) -> None:
    assert f"{prefix}-repo" not in steps["list code repositories"]["names"]

    repo = dict(steps["create code repository"])
    expected_source = repo.pop("expected_source")
    assert repo["name"] == f"{prefix}-repo"
    assert repo["project_id"] == project_id
    assert repo["user"] == USERNAME
    assert repo["config"] == {"url": f"https://git.example.invalid/{prefix}.git", "branch": "main"}
    assert repo["description"] == "created by the compatibility test"
    assert repo["logo_url"] == "https://git.example.invalid/logo.png"
    assert repo["source"] == expected_source
    assert steps["get code repository by name"] == repo
    assert steps["get code repository by id"] == repo
    assert f"{prefix}-repo" in steps["list code repositories again"]["names"]
    assert steps["update code repository"] == {**repo, "description": "updated"}
    assert steps["delete code repository"]["get_after"]["raised"] == "KeyError"


def check_pipeline_runs(steps: dict[str, Any], prefix: str, project_id: str) -> None:
    pipeline = f"{prefix}-pipeline"
    names = ("compat_make_number", "compat_double")
    first, second = steps["first run"], steps["second run"]
    for run in (first, second):
        assert run["status"] == "completed", run
        assert run["pipeline"] == pipeline
        assert run["stack"] == "default"
        assert run["name"].startswith(f"{pipeline}-")
        assert run["output"] == 2 * len(prefix)  # the returned artifact, loaded back
    assert first["steps"] == dict.fromkeys(names, "completed")
    assert first["original_steps"] == dict.fromkeys(names)
    # The second run found each step's first run by its cache key and reused it.
    assert second["steps"] == dict.fromkeys(names, "cached")
    assert second["original_steps"] == first["step_ids"]

    listed = steps["list runs"]
    assert listed["total"] == 2
    assert listed["names"] == [first["name"], second["name"]]
    assert listed["statuses"] == ["completed", "completed"]
    assert (listed["latest_run_id"], listed["latest_run_status"]) == (second["id"], "completed")

    logs = steps["step logs"]
    assert set(logs) == {"prepare_step", "step"}, logs
    assert f"doubling {len(prefix)}" in logs["step"], logs

    rows = steps["cli runs list"]["rows"]
    assert [(r["id"], r["index"]) for r in rows] == [(second["id"], 2), (first["id"], 1)]
    for row in rows:
        assert (row["pipeline"], row["status"]) == (pipeline, "completed")
        assert (row["stack"], row["owner"]) == ("default", USERNAME)


def check_tags_and_metadata(steps: dict[str, Any], prefix: str, project_id: str) -> None:
    read = steps["read back"]
    # The decorator's tag came with the run; "-b" was added and removed again.
    assert read["run_tags"] == [f"{prefix}-a", f"{prefix}-decorated"]
    # A run's own metadata only: its steps' are in the run's only when asked for in full.
    assert read["run_metadata"] == {"compat_run_note": "outside"}
    assert read["step_metadata"] == {"compat_step_size": len(prefix)}
    assert read["artifact_tags"] == [f"{prefix}-art"]
    assert read["version_tags"] == [f"{prefix}-ver"]
    # The client logs the output's size and representation besides the step's note.
    assert read["version_metadata"] == {
        "compat_output_note": f"from {prefix}",
        "string_representation": str(len(prefix)),
        "storage_size": 2,
    }
    assert steps["runs by tag"] == {"ids": [read["run_id"]]}
    suffixes = ["a", "art", "b", "decorated", "ver"]
    assert steps["list tags"]["names"] == [f"{prefix}-{s}" for s in suffixes]


def check_service_accounts(steps: dict[str, Any], prefix: str, project_id: str) -> None:
    assert steps["create"] == {
        "active": True,
        "key_prefix": "ZENKEY_",
        "key_shown_again": None,  # shown once, at creation
        "key_active": True,
    }
    assert steps["cli login"] == {"user": f"{prefix}-sa"}
    assert steps["rotate and deactivate"] == {
        "before_rotation": 200,
        "user_before": f"{prefix}-sa",
        "old_key_after_rotation": 401,  # no grace period asked
        "new_key_after_rotation": 200,
        "keys_differ": True,
        "new_key_after_deactivation": 401,
        "token_after_deactivation": 401,
    }


SECTION_CHECKS = {
    "artifacts": check_artifacts,
    "artifact versions": check_artifact_versions,
    "code repositories": check_code_repositories,
    "pipeline runs": check_pipeline_runs,
    "tags and metadata": check_tags_and_metadata,
    "service accounts": check_service_accounts,
}


def check_scenario(
    report: dict[str, Any], server: str, only: tuple[str, ...] | None = None
) -> None:
    """Every section ran and returned what the reference returns; otherwise one failure that
    lists every failed call (with the server's answers) and every wrong value."""
    problems = [describe_failure(f) for f in report["failures"]]
    failed = {f["section"] for f in report["failures"]}
    prefix, project_id = report["prefix"], report["project_id"]
    if "connect" not in failed:
        sections: dict[str, dict[str, Any]] = {}
        for step in report["steps"]:
            sections.setdefault(step["section"], {})[step["step"]] = step["value"]
        try:
            check_connect(sections["connect"], prefix)
        except AssertionError as exc:
            problems.append(f"[connect] wrong value: {exc}")
        for section, check in SECTION_CHECKS.items():
            if section in failed or (only is not None and section not in only):
                continue
            try:
                check(sections.get(section, {}), prefix, project_id)
            except (AssertionError, KeyError) as exc:
                problems.append(f"[{section}] wrong value: {type(exc).__name__}: {exc}")
    if problems:
        checked = [s for s in SECTION_CHECKS if only is None or s in only]
        passed = [s for s in ["connect", *checked] if s not in failed]
        summary = (
            f"the zenml {CLIENT_VERSION} client against {server}: {len(problems)} problem(s); "
            f"sections without a failed call: {', '.join(passed) or 'none'}"
        )
        pytest.fail("\n\n".join([summary, *problems]), pytrace=False)


def test_zenml_client_against_our_stack(zenml_client, stack, tmp_path):
    assert stack.process.poll() is None, f"the launcher is gone:\n{stack.log_tail()}"
    url = stack.url("platform", "")
    report = run_scenario(zenml_client, url, ADMIN_PASSWORD, tmp_path, OUR_SECTIONS)
    check_scenario(report, f"our stack (gateway {url})", OUR_SECTIONS)


UNSERVED = """
from zenml.client import Client

store = Client().zen_store
answers = {}
for name, call in [
    ("stack deployment", lambda: store.get("/stack-deployment")),
    ("resource pools", lambda: store.get("/resource_pools")),
    ("unknown", lambda: store.get("/nothing-here")),
]:
    try:
        call()
        answers[name] = "no error"
    except Exception as exc:  # what the client raised, as a user sees it
        answers[name] = [type(exc).__name__, str(exc)]
emit(answers)
"""


def test_zenml_client_explains_what_our_stack_does_not_serve(zenml_client, stack, tmp_path):
    """An API family of the reference no service implements is the client's
    NotImplementedError, an unknown path its KeyError, each with a sentence (not
    ``KeyError: 'Not Found'``); resource pools are refused as the reference's open-source
    server refuses them."""
    answers = run_client_snippet(
        zenml_client,
        stack.url("platform", ""),
        ADMIN_PASSWORD,
        tmp_path,
        UNSERVED,
        "unserved",
        timeout=300,
    )
    assert answers["stack deployment"] == [
        "NotImplementedError",
        "/api/v1/stack-deployment is not implemented by this server.",
    ]
    assert answers["resource pools"] == [
        "NotImplementedError",
        "Resource pool functionality is not enabled",
    ]
    assert answers["unknown"] == ["KeyError", repr(NO_SUCH_ENDPOINT)]


def _free_port() -> int:
    for port in range(47000, 48000, 7):
        if port_free(port):
            return port
    raise AssertionError("no free port for the reference server")


needs_reference = pytest.mark.skipif(
    os.environ.get("COMPAT_REFERENCE") != "1",
    reason="needs zenml[server]==0.96.3 (a heavy install); set COMPAT_REFERENCE=1",
)


def against_reference(tmp_path: Path, run: Callable[[str, str, Path], Any]) -> Any:
    """``run(url, password, client_dir)`` while a real ZenML 0.96.3 server runs."""
    try:
        server = server_venv()
    except ZenmlEnvError as exc:
        pytest.fail(f"zenml server environment: {exc}", pytrace=False)
    password = f"Ref-{secrets.token_urlsafe(12)}"
    client_dir = tmp_path / "client"
    client_dir.mkdir()
    try:
        with reference_server(
            server.python, tmp_path / "server", port=_free_port(), password=password
        ) as running:
            return run(running.url, password, client_dir), running.url
    except ZenmlEnvError as exc:
        pytest.fail(f"reference server: {exc}", pytrace=False)


@needs_reference
def test_against_reference(zenml_client, tmp_path):
    """The same scenario and checks against the real ZenML 0.96.3 server."""
    report, url = against_reference(
        tmp_path, lambda url, password, workdir: run_scenario(zenml_client, url, password, workdir)
    )
    check_scenario(report, f"the reference server ({url})")


MODEL_SCENARIO = Path(__file__).with_name("model_scenario.py")


def run_models(client: ZenmlVenv, store_url: str, password: str, workdir: Path) -> Any:
    """``model_scenario.py`` against ``store_url``; what it emitted."""
    return run_client_snippet(
        client, store_url, password, workdir, MODEL_SCENARIO.read_text(), "model"
    )


def check_models(out: dict[str, Any]) -> None:
    first, second = out["runs"]
    assert (first["model_version"], second["model_version"]) == (["1", 1], ["2", 2])
    assert first["seen"].endswith(":1:1")
    assert second["seen"].endswith(":2:2")
    # As the reference: a pipeline's model is its runs', not its steps'.
    assert (second["step_version"], second["step_nested"]) == ("None", None)
    assert len(out["linked_runs"]) == 1
    assert out["linked_artifacts"], "the step's output was not linked to the version"
    assert out["production"] == 2
    assert out["pinned"]["model_version"] == ["2", 2]
    assert out["versions"] == [1, 2]
    for name, answer in out["cli"].items():
        assert answer["code"] == 0, f"{name}: {answer}"
    assert "-cli" in out["cli"]["list"]["out"]
    assert out["updated"] == ["described", ["a", "b"]]
    assert out["stages"] == {"1": "archived"}
    assert out["models after"] == []


def test_zenml_models_against_our_stack(zenml_client, stack, tmp_path):
    """Models and their versions as the client makes them in a pipeline run (the step
    context's model, the run's version, the links) and as ``zenml model`` manages them."""
    check_models(run_models(zenml_client, stack.url("platform", ""), ADMIN_PASSWORD, tmp_path))


@needs_reference
def test_models_against_reference(zenml_client, tmp_path):
    """The same model scenario and checks against the real ZenML 0.96.3 server."""
    out, _ = against_reference(
        tmp_path, lambda url, password, workdir: run_models(zenml_client, url, password, workdir)
    )
    check_models(out)
