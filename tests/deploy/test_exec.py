"""``python -m deploy.local exec [flags] SERVICE [ARGS ...]``: a service's command run with
the environment the launcher gives that service, whether or not the stack is running.

The arguments and the environment are checked without starting anything; the command is
run as a process on the fake stack of tests/deploy (its identity's ``command`` prints what
it got) while the stack runs and after it stopped; and once on the real stack (e2e):
identity's reset-password lifting a lockout while it runs, and what works once it stopped.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from deploy.local import execute, secrets
from deploy.local.datadir import SetupError
from deploy.local.options import (
    FLAGS_WITHOUT_VALUE,
    REPO_ROOT,
    Command,
    UsageError,
    _parser,
    parse_exec,
    parse_options,
)
from identity.auth.service import password_subject
from shared.redis import Keys, create_redis
from shared.throttle import LoginThrottle, LoginThrottleSettings
from tests.deploy.test_launcher import launcher_env, start_launcher, write_fake_stack
from tests.support.processes import PASSWORDS, launch_stack, process_environment


def exec_of(*argv: str, environ: dict[str, str] | None = None) -> Command:
    return parse_exec(list(argv), environ or {})


@pytest.mark.parametrize(
    ("argv", "service", "args"),
    [
        (["identity", "reset-password", "default"], "identity", ("reset-password", "default")),
        (["identity"], "identity", ()),
        # Everything after the service is the command's, flags named like the launcher's too.
        (
            ["identity", "reset-password", "--password-stdin", "--data-dir", "x", "default"],
            "identity",
            ("reset-password", "--password-stdin", "--data-dir", "x", "default"),
        ),
        (["--port-offset", "5", "--log-json", "tracking", "--help"], "tracking", ("--help",)),
        (["--port-offset=5", "webhooks-worker"], "webhooks-worker", ()),
        (["--log-json", "--", "identity", "--log-json"], "identity", ("--log-json",)),
    ],
)
def test_the_service_is_the_first_argument_after_the_launchers_flags(argv, service, args):
    command = exec_of(*argv)
    assert command.service.name == service
    assert command.args == args


def test_exec_takes_the_launchers_flags_and_their_stack_variables(tmp_path):
    command = exec_of("--data-dir", str(tmp_path), "--log-json", "identity", "x")
    assert command.options.data_dir == tmp_path.resolve()
    assert command.options.log_json
    by_variable = exec_of("identity", environ={"STACK_PORT_OFFSET": "7"})
    assert by_variable.options == parse_options(["--port-offset", "7"], {})


def test_the_flags_without_a_value_are_the_parsers():
    options = parse_options([], {})
    parser = _parser(options.stack, Path("stack.toml"), {})
    flags = {
        flag for action in parser._actions if action.nargs == 0 for flag in action.option_strings
    }
    assert flags == FLAGS_WITHOUT_VALUE


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "name a service: exec [flags] SERVICE [ARGS ...] (one of: identity, tracking"),
        (["--log-json"], "name a service"),
        (["--data-dir"], "invalid arguments"),
        (["nobody", "x"], "no service 'nobody' in the stack (one of: identity, tracking"),
        (["--port-offset", "x", "identity"], "--port-offset must be an integer"),
    ],
)
def test_bad_exec_arguments_are_a_usage_error(argv, message):
    with pytest.raises(UsageError, match=message.replace("[", r"\[").replace("(", r"\(")):
        exec_of(*argv)


def test_the_command_gets_the_services_settings_and_the_data_dirs_secrets(tmp_path):
    stored, _ = secrets.load_or_create(tmp_path, parse_options([], {}).stack)
    command = exec_of(
        "--data-dir", str(tmp_path), "--port-offset", "5", "identity", "make-admin", "x",
        environ={"PATH": "/bin", "DEFAULT_ADMIN_PASSWORD": "chosen", "DATABASE_URL": "elsewhere"},
    )  # fmt: skip

    argv, env, notes = execute.prepare(command, {"PATH": "/bin", "DATABASE_URL": "elsewhere"})

    assert argv == [sys.executable, "-m", "identity", "make-admin", "x"]
    assert notes == []
    assert env["DATABASE_URL"] == f"postgresql+asyncpg://postgres@127.0.0.1:{5499 + 5}/identity"
    assert env["REDIS_URL"] == f"redis://127.0.0.1:{6399 + 5}/0"
    assert env["REDIS_NAMESPACE"] == "platform"
    assert env["SERVER_ID"] == stored.server_id
    keys = stored.generated["identity"]["SIGNING_KEY_ENCRYPTION_KEYS"]
    assert env["SIGNING_KEY_ENCRYPTION_KEYS"] == keys
    assert env["PATH"] == "/bin"


def test_a_data_dir_no_stack_has_run_with_is_refused(tmp_path):
    command = exec_of("--data-dir", str(tmp_path / "never"), "identity", "make-admin", "x")
    with pytest.raises(SetupError, match="no stack has run with the data dir"):
        execute.prepare(command, {})
    assert not (tmp_path / "never").exists()


def exec_command(
    *argv: str, env: dict[str, str], stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    """``python -m deploy.local exec <argv>`` as an operator runs it."""
    return subprocess.run(
        [sys.executable, "-m", "deploy.local", "exec", *argv],
        cwd=REPO_ROOT,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )


def run_exec(
    tmp_path: Path, *argv: str, stdin: str = ""
) -> tuple[subprocess.CompletedProcess[str], dict[str, object] | None]:
    """``exec`` on the fake stack in ``tmp_path``; the fake command's report, if any."""
    flags = ["--stack", str(tmp_path / "stack.toml"), "--data-dir", str(tmp_path / "data")]
    done = exec_command(*flags, *argv, env=launcher_env(), stdin=stdin)
    report = json.loads(done.stdout) if done.stdout.startswith("{") else None
    return done, report


def test_a_command_runs_with_the_running_services_environment_then_without_the_stack(
    scratch,
):
    """Without the stack, its embedded PostgreSQL runs for the command alone."""
    process, log, children = start_launcher(scratch)
    try:
        running = process_environment(children["identity"])

        done, report = run_exec(
            scratch, "identity", "command", "reset-password", "--password-stdin", "default",
            stdin="the new password\n",
        )  # fmt: skip

        assert done.returncode == 0, done.stderr
        assert done.stderr == ""
        assert report == {
            "args": ["reset-password", "--password-stdin", "default"],
            "cwd": str(REPO_ROOT),
            "stdin": "the new password\n",
            "env": running,
        }
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=20) == 0, log.read_text()

    done, report = run_exec(scratch, "identity", "command", "--exit", "3")

    assert done.returncode == 3
    assert "database system is shut down" in (scratch / "data/run/postgres-exec.log").read_text()
    assert not (scratch / "data/postgres/postmaster.pid").exists()
    assert report is not None
    assert report["env"] == running
    valkey = running["REDIS_URL"]
    assert done.stderr == (
        f"note: the stack's Valkey does not answer at {valkey}: is the stack running (with "
        "these flags)? A command that needs Redis cannot work without it.\n"
    )


def test_exec_refusals_are_one_line_and_exit_2(tmp_path):
    write_fake_stack(tmp_path / "stack.toml")
    for argv, message in [
        (["identity", "command"], "error: no stack has run with the data dir"),
        (["nobody"], "error: no service 'nobody' in the stack"),
    ]:
        done, _ = run_exec(tmp_path, *argv)
        assert done.returncode == 2
        assert done.stderr.startswith(message)
        assert done.stderr.count("\n") == 1
        assert done.stdout == ""
    (tmp_path / "data").mkdir()
    secrets.load_or_create(
        tmp_path / "data", parse_options(["--stack", str(tmp_path / "stack.toml")], {}).stack
    )
    done, _ = run_exec(tmp_path, "later")
    assert done.returncode == 2
    assert done.stderr == (
        "error: later cannot run: module module_that_does_not_exist_yet (or its __main__) "
        "does not exist yet\n"
    )


def exec_real(
    data_dir: Path, offset: int, databases: dict[str, str], *argv: str, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    """``exec`` on the real stack file with the stack's ``databases``, without the caller's
    stack variables or passwords."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("STACK_") and k not in PASSWORDS}
    env |= {f"{name.upper().replace('-', '_')}_DATABASE_URL": u for name, u in databases.items()}
    flags = ["--data-dir", str(data_dir), "--port-offset", str(offset)]
    return exec_command(*flags, *argv, env=env, stdin=stdin)


async def lock_out(redis_url: str, account: str) -> None:
    """Guesses from many addresses up to the account's ceiling: locked for a day."""
    redis = create_redis(redis_url)
    try:
        settings = LoginThrottleSettings()
        throttle = LoginThrottle(redis, Keys("platform"), settings)
        for index in range(settings.login_account_failure_ceiling):
            await throttle.failed(account, f"192.0.2.{index}")
    finally:
        await redis.aclose()


@pytest.mark.e2e
def test_an_operator_resets_a_locked_out_admins_password_on_the_local_stack(
    tmp_path, databases_of_stack
):
    data_dir = tmp_path / "data"
    with launch_stack(
        data_dir, admin_password="the first password", databases=databases_of_stack
    ) as stack:
        identity_env = process_environment(stack.children["identity"])
        valkey_port = urlsplit(identity_env["REDIS_URL"]).port
        assert valkey_port is not None
        offset = valkey_port - parse_options([], {}).stack.valkey_port
        asyncio.run(lock_out(identity_env["REDIS_URL"], password_subject("default")))
        login = stack.url("platform", "/api/v1/login")
        with httpx.Client(timeout=10.0, trust_env=False) as client:
            locked = client.post(
                login, data={"username": "default", "password": "the first password"}
            )
            assert locked.status_code == 429

            done = exec_real(
                data_dir, offset, databases_of_stack,
                "identity", "reset-password", "--password-stdin", "default",
                stdin="the operator's password\n",
            )  # fmt: skip

            assert done.returncode == 0, done.stderr
            assert done.stdout == "'default' is active, with the new password.\n"
            again = client.post(
                login, data={"username": "default", "password": "the operator's password"}
            )
            assert again.status_code == 200, again.text

    # The stack is stopped: what needs only the database works, what needs Redis says so.
    done = exec_real(data_dir, offset, databases_of_stack, "identity", "make-admin", "default")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "'default' is an active admin.\n"
    started = time.monotonic()
    done = exec_real(data_dir, offset, databases_of_stack, "identity", "reset-password", "default")
    assert time.monotonic() - started < 20
    assert done.returncode == 1
    assert done.stdout == ""
    note, refusal = done.stderr.splitlines()
    assert note.startswith(
        f"note: the stack's Valkey does not answer at redis://127.0.0.1:{valkey_port}/0"
    )
    assert refusal.startswith("Redis (REDIS_URL) cannot be reached, nothing was changed: ")
