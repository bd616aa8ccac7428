"""The unmodified ``zenml`` CLI (0.96.3) against our stack, each command its own ``zenml``
process, as a user types them, on one stack (a stack start is the dearest part of such a
module):

- ``zenml secret``: create (public and private), list, get, update (change, add and
  remove keys), rename and delete. Then a real pipeline run on a stack whose orchestrator
  links a secret (``--secret``: its values become the step's environment, with the
  component's ``--env``) and whose deployer's ``address`` is a secret reference
  (``{{name.key}}``), which the client resolves when it reads the configuration;
- ``zenml service-connector``: register with and without verification, list, describe,
  update, delete, list-types;
- ``zenml <component> flavor``: register a custom orchestrator flavor from the user's
  code, list and describe it, register a component of it (configured as the flavor's
  config class says, validated by the client), and delete both."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.compat.test_zenml_client import ADMIN_PASSWORD, run_client_snippet, stack, zenml_client
from tests.support.processes import LaunchedStack
from tests.support.zenml_env import ZenmlVenv

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

__all__ = ["stack", "zenml_client"]  # the module's stack and client, shared

CLI_SCENARIO = """
import json
import os

from zenml import pipeline, step


@step
def compat_read_environment() -> str:
    return os.environ.get("RUN_TOKEN", "-") + "/" + os.environ.get("STAGE", "-")


@pipeline(enable_cache=False)
def compat_secret_environment():
    compat_read_environment()

def listed(*args):
    answer = zenml("secret", "list", "--output", "json", *args)
    text = answer["out"]
    start = text.find("{")
    if answer["code"] == 0 and "No secrets found" in text:
        return []
    if answer["code"] != 0 or start < 0:
        return answer
    page = json.loads(text[start:])
    return sorted(item["name"] for item in page["items"])


steps = {}
steps["create"] = zenml("secret", "create", "compat-db", "--user=dbadmin42", "--password=s3cr3t-v1")
steps["create private"] = zenml("secret", "create", "compat-mine", "--private", "--token=t0k3n")
steps["create again"] = zenml("secret", "create", "compat-db", "--user=other")
steps["list"] = listed()
steps["list private"] = listed("--private", "true")
steps["get"] = zenml("secret", "get", "compat-db")
steps["update"] = zenml(
    "secret", "update", "compat-db", "--password=s3cr3t-v2", "--host=db.local", "-r", "user"
)
steps["get updated"] = zenml("secret", "get", "compat-db")
steps["rename"] = zenml("secret", "rename", "compat-db", "-n", "compat-database")
steps["get renamed"] = zenml("secret", "get", "compat-database")
steps["delete"] = zenml("secret", "delete", "compat-database", "-y")
steps["delete private"] = zenml("secret", "delete", "compat-mine", "-y")
steps["get deleted"] = zenml("secret", "get", "compat-database")
steps["list after"] = listed()

steps["run secret"] = zenml(
    "secret", "create", "compat-run", "--RUN_TOKEN=tok-run-1", "--bind=127.0.0.9"
)
steps["orchestrator"] = zenml(
    "orchestrator", "register", "compat-orch", "--flavor", "local", "--secret", "compat-run",
    "--env", "STAGE=compat",
)
steps["deployer"] = zenml(
    "deployer", "register", "compat-dep", "--flavor", "local", "--address={{compat-run.bind}}"
)
steps["stack"] = zenml(
    "stack", "register", "compat-secrets", "-o", "compat-orch", "-a", "default", "-D", "compat-dep",
    "--set",
)
from zenml.client import Client

client = Client()
run = compat_secret_environment()
got = client.get_pipeline_run(run.id)
steps["run"] = {
    "status": str(got.status.value),
    "output": got.steps["compat_read_environment"].output.load(),
    "address": client.active_stack.deployer.config.address,
    "configured": client.get_stack_component("deployer", "compat-dep").configuration,
}
emit(steps)
"""


def run_cli(
    client: ZenmlVenv, stack: LaunchedStack, workdir: Path, scenario: str, what: str
) -> dict[str, Any]:
    """The steps ``scenario`` emitted, run by one client process."""
    steps: dict[str, Any] = run_client_snippet(
        client, stack.url("platform", ""), ADMIN_PASSWORD, workdir, scenario, what
    )
    return steps


def succeeded(steps: dict[str, Any]) -> Callable[[str], str]:
    """``ok(name)``: the output of step ``name``, which must have succeeded."""

    def ok(name: str) -> str:
        answer = steps[name]
        assert answer["code"] == 0, f"{name}: {answer}"
        out: str = answer["out"]
        return out

    return ok


def test_zenml_secret_cli_against_our_stack(zenml_client, stack, tmp_path):
    steps = run_cli(zenml_client, stack, tmp_path, CLI_SCENARIO, "secret CLI")
    ok = succeeded(steps)

    assert "Secret 'compat-db' successfully created." in ok("create")
    ok("create private")
    assert steps["create again"]["code"] != 0
    assert (
        "Found an existing public secret with the same 'compat-db' name"
        in (steps["create again"]["out"])
    )
    assert steps["list"] == ["compat-db", "compat-mine"]
    assert steps["list private"] == ["compat-mine"]
    got = ok("get")
    assert "s3cr3t-v1" in got
    assert "dbadmin42" in got
    assert "successfully updated" in ok("update")
    updated = ok("get updated")
    assert "s3cr3t-v2" in updated
    assert "db.local" in updated
    assert "s3cr3t-v1" not in updated
    assert "dbadmin42" not in updated  # "user" was removed
    assert "successfully renamed" in ok("rename")
    assert "s3cr3t-v2" in ok("get renamed")
    assert "successfully deleted" in ok("delete")
    ok("delete private")
    assert steps["get deleted"]["code"] != 0
    assert steps["list after"] == []
    for name in ("run secret", "orchestrator", "deployer", "stack"):
        ok(name)
    assert steps["run"]["status"] == "completed"
    assert steps["run"]["output"] == "tok-run-1/compat"
    assert steps["run"]["address"] == "127.0.0.9"
    assert steps["run"]["configured"]["address"] == "{{compat-run.bind}}"


CONNECTOR_SCENARIO = """
def yes(*args):
    # Each command's confirmation prompt answered yes.
    return zenml(*args, input="y\\n")


hub = ["--type", "docker", "--auth-method", "password", "--username=hubuser"]
steps = {}
steps["list-types"] = yes("service-connector", "list-types")
steps["register"] = yes(
    "service-connector", "register", "compat-hub", *hub, "--password=pw-v1",
    "--registry=ghcr.io/compat",
)
steps["register unverified"] = yes(
    "service-connector", "register", "compat-k8s", "--type", "kubernetes", "--auth-method",
    "token", "--server=https://10.0.0.1:6443", "--token=k8s-token", "--cluster_name=c1",
    "--no-verify",
)
steps["register verified k8s"] = yes(
    "service-connector", "register", "compat-k8s-2", "--type", "kubernetes", "--auth-method",
    "token", "--server=https://10.0.0.1:6443", "--token=k8s-token", "--cluster_name=c1",
)
steps["list"] = yes("service-connector", "list")
steps["describe"] = yes("service-connector", "describe", "compat-hub", "--show-secrets")
steps["update"] = yes("service-connector", "update", "compat-hub", "--password=pw-v2")
steps["describe updated"] = yes("service-connector", "describe", "compat-hub", "--show-secrets")
steps["delete"] = yes("service-connector", "delete", "compat-hub")
steps["delete unverified"] = yes("service-connector", "delete", "compat-k8s")
steps["list after"] = yes("service-connector", "list")
emit(steps)
"""


def test_zenml_service_connector_cli_against_our_stack(zenml_client, stack, tmp_path):
    """``zenml service-connector`` (register with and without verification, list,
    describe, update, delete, list-types), every command in one client process."""
    steps = run_cli(zenml_client, stack, tmp_path, CONNECTOR_SCENARIO, "service connector")
    ok = succeeded(steps)

    types = ok("list-types")
    for name in ("Docker Service Connector", "Kubernetes Service Connector", "docker-registry"):
        assert name in types
    assert "Successfully registered service connector `compat-hub`" in ok("register")
    assert "ghcr.io" in steps["register"]["out"]
    assert "Successfully registered service connector `compat-k8s`" in ok("register unverified")
    refused = steps["register verified k8s"]
    assert refused["code"] != 0
    assert "failed to verify Kubernetes cluster access" in refused["out"]
    listed = ok("list")
    assert "compat-hub" in listed
    assert "compat-k8s" in listed
    assert "compat-k8s-2" not in listed
    described = ok("describe")
    assert "pw-v1" in described
    assert "ghcr.io/compat" in described
    ok("update")
    assert "pw-v2" in ok("describe updated")
    ok("delete")
    ok("delete unverified")
    assert "compat-hub" not in ok("list after")


FLAVOR_CODE = '''
from zenml.orchestrators import BaseOrchestratorConfig, BaseOrchestratorFlavor
from zenml.orchestrators.local.local_orchestrator import LocalOrchestrator


class CompatOrchestratorConfig(BaseOrchestratorConfig):
    """Where the compat orchestrator sends its runs."""

    endpoint: str
    retries: int = 1


class CompatOrchestratorFlavor(BaseOrchestratorFlavor):
    @property
    def name(self) -> str:
        return "compat_orch"

    @property
    def config_class(self):
        return CompatOrchestratorConfig

    @property
    def implementation_class(self):
        return LocalOrchestrator
'''

FLAVOR_SCENARIO = f"""
from pathlib import Path

Path("compat_flavor.py").write_text({FLAVOR_CODE!r})
steps = {{}}
steps["register"] = zenml(
    "orchestrator", "flavor", "register", "compat_flavor.CompatOrchestratorFlavor"
)
steps["register again"] = zenml(
    "orchestrator", "flavor", "register", "compat_flavor.CompatOrchestratorFlavor"
)
steps["list"] = zenml("orchestrator", "flavor", "list")
steps["describe"] = zenml("orchestrator", "flavor", "describe", "compat_orch")
steps["component unconfigured"] = zenml(
    "orchestrator", "register", "compat-bad", "--flavor", "compat_orch"
)
steps["component"] = zenml(
    "orchestrator", "register", "compat-custom", "--flavor", "compat_orch",
    "--endpoint=https://orch.example", "--retries=3",
)
steps["component describe"] = zenml("orchestrator", "describe", "compat-custom")
steps["delete in use"] = zenml("orchestrator", "flavor", "delete", "compat_orch")
steps["component delete"] = zenml("orchestrator", "delete", "compat-custom")
steps["delete"] = zenml("orchestrator", "flavor", "delete", "compat_orch")
steps["list after"] = zenml("orchestrator", "flavor", "list")
emit(steps)
"""


def test_zenml_flavor_cli_against_our_stack(zenml_client, stack, tmp_path):
    steps = run_cli(zenml_client, stack, tmp_path, FLAVOR_SCENARIO, "flavor CLI")
    ok = succeeded(steps)

    assert "Successfully registered new flavor 'compat_orch'" in ok("register")
    assert steps["register again"]["code"] != 0
    assert (
        "Found an existing flavor with the same name and type" in (steps["register again"]["out"])
    )
    listed = ok("list")
    assert "compat_orch" in listed
    assert "local" in listed
    described = ok("describe")
    assert "endpoint" in described
    assert "retries" in described
    # The client checks the configuration against the flavor's config class.
    assert steps["component unconfigured"]["code"] != 0
    ok("component")
    component = ok("component describe")
    assert "https://orch.example" in component
    assert "compat_orch" in component
    assert steps["delete in use"]["code"] != 0
    assert "cannot be deleted as it is used by 1 components" in steps["delete in use"]["out"]
    ok("component delete")
    ok("delete")
    assert "compat_orch" not in ok("list after")
