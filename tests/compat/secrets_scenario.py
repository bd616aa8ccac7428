"""The unmodified ``zenml secret`` CLI (0.96.3) against a running stack: create (public and
private), list, get, update (change, add and remove keys), rename and delete, each as its
own ``zenml`` process, as a user types them. ``tests/compat/test_zenml_client.py`` runs it
on its stack (one stack for the client's scenarios)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.zenml_env import ZenmlEnvError, ZenmlVenv, run_snippet

CLI_SCENARIO = """
import json
import subprocess
import sys

CLI = [sys.executable, "-c", "from zenml.cli.cli import cli; cli()"]


def zenml(*args):
    done = subprocess.run(
        [*CLI, *args], capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL
    )
    return {"code": done.returncode, "out": done.stdout + done.stderr}


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
emit(steps)
"""


def run_cli(client: ZenmlVenv, env: dict[str, str], workdir: Path) -> dict[str, Any]:
    """The scenario's report, the client logged in by ``env``."""
    env = dict(env)
    # Rich tables wrap at the terminal's width: wide enough for the values.
    env["COLUMNS"] = "200"
    try:
        steps: dict[str, Any] = run_snippet(
            client.python, CLI_SCENARIO, env=env, cwd=workdir, timeout=600
        ).value
    except ZenmlEnvError as exc:
        pytest.fail(f"the secret CLI scenario did not report: {exc}", pytrace=False)
    return steps


def check_secret_cli(client: ZenmlVenv, env: dict[str, str], workdir: Path) -> None:
    """Run the CLI scenario (the client's environment ``env`` names the server and the
    login) and check what each command did."""
    steps = run_cli(client, env, workdir)

    def ok(name: str) -> str:
        answer = steps[name]
        assert answer["code"] == 0, f"{name}: {answer}"
        out: str = answer["out"]
        return out

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
