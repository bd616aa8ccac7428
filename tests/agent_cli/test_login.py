"""``agent-run login``, ``status`` and ``logout`` against the real service: the stdin
logins run non-interactively, the password prompt and the device login run the CLI in a
pseudo-terminal; every stored file is checked."""

from __future__ import annotations

import json
import re
import stat
from pathlib import Path

import httpx

from tests.agent_cli.conftest import (
    ADMIN_PASSWORD,
    AGENT_RUN,
    admin_headers,
    cli_environment,
    new_api_key,
    run_cli,
)
from tests.support.processes import RunningService
from tests.support.terminal import finish, in_terminal, read_until, type_line


def stored(workdir: Path) -> dict[str, dict[str, object]]:
    path = workdir / "config" / "credentials.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    entries: dict[str, dict[str, object]] = json.loads(path.read_text())
    return entries


def selected(workdir: Path) -> str | None:
    value = json.loads((workdir / "config" / "config.json").read_text()).get("server_url")
    return value if isinstance(value, str) else None


def test_password_stdin_login_stores_a_session_and_selects_the_server(
    service: RunningService, tmp_path: Path
):
    env = cli_environment(tmp_path)

    done = run_cli(["-o", "json", "login", service.url + "//", "--username", "default",
                    "--password-stdin"], env, stdin=ADMIN_PASSWORD + "\n")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.json() == {"server": service.url, "account": "default", "scheme": "password"}
    [entry] = stored(tmp_path).values()
    assert entry["url"] == service.url
    assert set(entry) == {"url", "type", "api_token"}
    assert ADMIN_PASSWORD not in (tmp_path / "config" / "credentials.json").read_text()
    assert selected(tmp_path) == service.url

    status = run_cli(["-o", "json", "status"], env)
    assert status.returncode == 0, status.stderr
    result = status.json()
    assert (result["server"], result["account"], result["scheme"]) == (
        service.url, "default", "password",
    )  # fmt: skip
    assert result["auth_scheme"] == "local"
    assert result["authenticated"] is True


def test_api_key_stdin_login_stores_the_key_and_status_uses_it(
    service: RunningService, tmp_path: Path
):
    env = cli_environment(tmp_path)
    key = new_api_key(service.url)

    done = run_cli(["-o", "json", "login", service.url, "--api-key-stdin"], env, stdin=key + "\n")
    assert done.returncode == 0, done.stderr
    assert key not in done.stdout
    assert done.json()["scheme"] == "api-key"
    assert stored(tmp_path)[service.url]["api_key"] == key
    assert run_cli(["-o", "json", "status"], env).json()["scheme"] == "api-key"


def test_wrong_password_and_wrong_key_exit_3_and_store_nothing(
    service: RunningService, tmp_path: Path
):
    env = cli_environment(tmp_path)

    wrong = run_cli(["-o", "json", "login", service.url, "--username", "default",
                     "--password-stdin"], env, stdin="nope\n")  # fmt: skip
    assert wrong.returncode == 3
    assert wrong.error() == {"message": "Invalid username or password.", "code": "AUTH"}
    bad_key = run_cli(["login", service.url, "--api-key-stdin"], env, stdin="SVCKEY_bogus\n")
    assert bad_key.returncode == 3
    assert "Invalid API key." in bad_key.stderr
    assert "Traceback" not in wrong.stderr + bad_key.stderr
    assert not (tmp_path / "config" / "credentials.json").exists()


def test_login_without_a_terminal_asks_for_stdin_flags(service: RunningService, tmp_path: Path):
    env = cli_environment(tmp_path)

    device = run_cli(["login", service.url], env)
    prompt = run_cli(["login", service.url, "--username", "default"], env)

    for done in (device, prompt):
        assert done.returncode == 5, done.stderr
        assert "--password-stdin" in done.stderr


def test_environment_overrides_the_server_and_the_stored_credential(
    service: RunningService, tmp_path: Path
):
    env = cli_environment(tmp_path)
    run_cli(["login", service.url, "--username", "default", "--password-stdin"], env,
            stdin=ADMIN_PASSWORD + "\n")  # fmt: skip
    key = new_api_key(service.url)

    with_key = run_cli(["-o", "json", "status"], {**env, "SERVICE_API_KEY": key})
    assert (with_key.json()["scheme"], with_key.json()["source"]) == ("api-key", "SERVICE_API_KEY")
    bad_token = run_cli(
        ["-o", "json", "status"],
        {**env, "SERVICE_API_KEY": key, "SERVICE_API_TOKEN": "not-a-token"},
    )
    assert bad_token.returncode == 3  # the token wins over the key, and is refused
    assert bad_token.json()["source"] == "SERVICE_API_TOKEN"
    other = run_cli(["-o", "json", "status"], {**env, "SERVICE_API_URL": "http://127.0.0.1:9"})
    assert other.returncode == 4
    assert "cannot reach http://127.0.0.1:9" in other.error()["message"]
    flag = run_cli(["-o", "json", "--server", service.url + "/", "status"],
                   {**env, "SERVICE_API_URL": "http://127.0.0.1:9"})  # fmt: skip
    assert flag.returncode == 0, flag.stderr


def test_logout_forgets_one_server_and_all(service: RunningService, tmp_path: Path):
    env = cli_environment(tmp_path)
    run_cli(["login", service.url, "--username", "default", "--password-stdin"], env,
            stdin=ADMIN_PASSWORD + "\n")  # fmt: skip
    token = str(stored(tmp_path)[service.url]["api_token"]["access_token"])  # type: ignore[index]

    done = run_cli(["-o", "json", "logout", service.url + "/"], env)
    assert done.json() == {"removed": True, "server": service.url}
    assert stored(tmp_path) == {}
    assert selected(tmp_path) is None
    # The session was ended on the server too.
    me = httpx.get(f"{service.url}/api/v1/accounts/me",
                   headers={"Authorization": f"Bearer {token}"}, timeout=30)  # fmt: skip
    assert me.status_code == 401
    not_logged_in = run_cli(["-o", "json", "status"], env)
    assert not_logged_in.returncode == 3

    run_cli(["login", service.url, "--api-key-stdin"], env, stdin=new_api_key(service.url) + "\n")
    everything = run_cli(["-o", "json", "logout", "--all"], env)
    assert everything.json() == {"removed": True, "server": None}
    assert not (tmp_path / "config" / "credentials.json").exists()


def test_bad_urls_are_usage_errors(tmp_path: Path):
    env = cli_environment(tmp_path)
    for url in ("ftp://example.com", "http://user:pw@example.com", "http://h/?q=1", "nohost"):
        done = run_cli(["-o", "json", "login", url, "--api-key-stdin"], env, stdin="k\n")
        assert done.returncode == 2, (url, done.stderr)
        assert done.error()["code"] == "USAGE"


VERIFICATION = re.compile(r"device_id=([0-9a-f-]{36})&user_code=([A-Z0-9]{4}-[A-Z0-9]{4})")


def test_device_login_in_a_terminal_shows_the_code_and_stores_the_device(
    service: RunningService, tmp_path: Path
):
    env = cli_environment(tmp_path)
    process = in_terminal([AGENT_RUN, "login", service.url], env)
    shown = read_until(process, VERIFICATION, timeout=30)
    match = VERIFICATION.search(shown)
    assert match is not None
    device_id, user_code = match.groups()
    assert f"{service.url}/devices/verify?" in shown
    assert f"confirm the code {user_code}" in shown

    admin = admin_headers(service.url)
    approved = httpx.post(f"{service.url}/api/v1/devices/{device_id}/verify",
                          json={"user_code": user_code}, headers=admin, timeout=30)  # fmt: skip
    assert approved.status_code == 200, approved.text
    output = finish(process, timeout=30)
    assert process.returncode == 0, shown + output
    assert f"Logged in to {service.url} as default (device)." in output

    entry = stored(tmp_path)[service.url]
    assert entry["device_id"] == device_id
    assert re.fullmatch(r"[0-9a-f]{64}", str(entry["device_code"]))
    assert run_cli(["-o", "json", "status"], env).json()["scheme"] == "device"

    # Past its expiry the session is renewed with the device code, until the device is locked.
    path = tmp_path / "config" / "credentials.json"
    entry["api_token"]["expires_at"] = "2000-01-01T00:00:00+00:00"  # type: ignore[index]
    path.write_text(json.dumps({service.url: entry}))
    renewed = run_cli(["-o", "json", "status"], env)
    assert renewed.returncode == 0, renewed.stderr
    assert stored(tmp_path)[service.url]["api_token"] != entry["api_token"]
    httpx.patch(f"{service.url}/api/v1/devices/{device_id}", json={"locked": True},
                headers=admin, timeout=30)  # fmt: skip
    path.write_text(json.dumps({service.url: entry}))
    locked = run_cli(["-o", "json", "status"], env)
    assert locked.returncode == 3
    assert "the device login for" in locked.error()["message"]


def test_password_prompt_in_a_terminal_hides_the_password(service: RunningService, tmp_path: Path):
    env = cli_environment(tmp_path)
    process = in_terminal([AGENT_RUN, "login", service.url, "--username", "default"], env)
    read_until(process, re.compile("Password: "), timeout=30)
    type_line(process, ADMIN_PASSWORD)
    output = finish(process, timeout=30)

    assert process.returncode == 0, output
    assert ADMIN_PASSWORD not in output
    assert f"Logged in to {service.url} as default (password)." in output
    assert stored(tmp_path)[service.url]["api_token"]


def test_wrong_password_at_the_prompt_exits_3_without_a_traceback(
    service: RunningService, tmp_path: Path
):
    env = cli_environment(tmp_path)
    process = in_terminal([AGENT_RUN, "login", service.url, "--username", "default"], env)
    read_until(process, re.compile("Password: "), timeout=30)
    type_line(process, "wrong")
    output = finish(process, timeout=30)

    assert process.returncode == 3
    assert "Error: Invalid username or password." in output
    assert "Traceback" not in output
