"""The unmodified ``zenml <component> flavor`` CLI (0.96.3) against our stack: register a
custom orchestrator flavor from the user's code, list and describe it, register a
component of it (configured as the flavor's config class says, validated by the client),
and delete both, each as its own ``zenml`` process, as a user types them."""

from __future__ import annotations

import pytest

from tests.compat.test_zenml_client import stack, zenml_client
from tests.compat.test_zenml_secrets import run_cli, succeeded

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

__all__ = ["stack", "zenml_client"]  # the module's stack and client, shared

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

SCENARIO = f"""
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
    steps = run_cli(zenml_client, stack, tmp_path, SCENARIO, "flavor CLI")
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
