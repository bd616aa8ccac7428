"""The credentials store's own guarantees: private modes whatever the umask, whole-file
replacement, no lost entries between concurrent writers, and the same strict read for
``agent-run`` as for the read-only client."""

from __future__ import annotations

import datetime as dt
import os
import stat
import threading
from pathlib import Path

from agent_cli.store import ApiToken, Entry, Store
from agent_cli.worker.process import task_environment
from tests.agent_cli.conftest import cli_environment, run_cli


def test_files_are_private_whatever_the_umask(tmp_path: Path):
    store = Store(tmp_path / "config")
    previous = os.umask(0)
    try:
        store.save(Entry("https://a.example", api_key="SVCKEY_x"), select=True)
    finally:
        os.umask(previous)

    for path in (store.credentials_path, store.config_path):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(store.directory.stat().st_mode) == 0o700
    assert sorted(p.name for p in store.directory.iterdir()) == [
        ".lock", "config.json", "credentials.json",
    ]  # fmt: skip


def test_concurrent_writers_lose_no_entry(tmp_path: Path):
    store = Store(tmp_path / "config")
    token = ApiToken("t", dt.datetime.now(dt.UTC), 30)

    def write(prefix: str) -> None:
        for n in range(15):
            Store(store.directory).save(Entry(f"https://{prefix}{n}", api_token=token), select=True)

    threads = [threading.Thread(target=write, args=(p,)) for p in "abc"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(store.entries()) == 45
    assert store.selected() in store.entries()


def test_remove_and_clear(tmp_path: Path):
    store = Store(tmp_path / "config")
    store.save(Entry("https://a.example", api_key="k"), select=True)
    store.save(Entry("https://b.example", api_key="k"), select=False)

    assert store.remove("https://a.example") is True
    assert store.remove("https://a.example") is False
    assert store.selected() is None
    assert list(store.entries()) == ["https://b.example"]
    assert store.clear() is True
    assert store.entries() == {}


def test_the_cli_refuses_a_credentials_file_others_can_read(tmp_path: Path):
    env = cli_environment(tmp_path, SERVICE_API_URL="http://127.0.0.1:9")
    store = Store(Path(env["SERVICE_CONFIG_DIR"]))
    store.save(Entry("http://127.0.0.1:9", api_key="SVCKEY_x"), select=True)
    store.credentials_path.chmod(0o644)

    done = run_cli(["-o", "json", "status"], env)

    assert done.returncode == 6
    assert done.error()["code"] == "CONFIG"
    assert "run chmod 600" in done.error()["message"]


def test_a_malformed_credentials_file_is_a_clear_error(tmp_path: Path):
    env = cli_environment(tmp_path, SERVICE_API_URL="http://127.0.0.1:9")
    store = Store(Path(env["SERVICE_CONFIG_DIR"]))
    store.save(Entry("http://127.0.0.1:9", api_key="SVCKEY_x"), select=True)
    store.credentials_path.write_text("{not json")

    done = run_cli(["status"], env)

    assert done.returncode == 6
    assert done.stderr.strip() == f"Error: {store.credentials_path} is not valid JSON"


def test_task_environment_drops_contract_variables_in_any_case(tmp_path: Path):
    inherited = {"PATH": "/bin", "SERVICE_API_KEY": "key", "service_api_key": "key",
                 "Service_Task_Id": "old", "SERVICE_API_URL": "http://old"}  # fmt: skip
    env = task_environment(inherited, {"EXTRA": "1", "SERVICE_API_TOKEN": "forged"},
                           url="http://new", token="tok", task_id="t1",
                           result_path=tmp_path / "r.json")  # fmt: skip

    assert env == {
        "PATH": "/bin", "EXTRA": "1", "SERVICE_API_URL": "http://new",
        "SERVICE_API_TOKEN": "tok", "SERVICE_TASK_ID": "t1",
        "SERVICE_TASK_RESULT_PATH": str(tmp_path / "r.json"),
    }  # fmt: skip
