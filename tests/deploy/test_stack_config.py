"""deploy/stack.toml validation, the launcher's options, secrets and child environments."""

from __future__ import annotations

import copy
import json
import stat
import tomllib
from typing import Any

import pytest

from deploy.config import DEFAULT_STACK_FILE, StackConfigError, load_stack, parse_stack
from deploy.local.environment import service_environment
from deploy.local.options import UsageError, parse_options, plan_ports
from deploy.local.secrets import FILE_NAME, SecretsError, load_or_create

RAW = tomllib.loads(DEFAULT_STACK_FILE.read_text())
STACK = load_stack()


def raw_stack() -> dict[str, Any]:
    return copy.deepcopy(RAW)


def test_the_committed_stack_file_is_valid():
    assert STACK.issuer.name == "identity"
    assert {s.name for s in STACK.web_services} == {
        "identity",
        "tracking",
        "webhooks",
        "agent-accounts",
    }
    assert STACK.service("webhooks-worker").owner == "webhooks"


def _service(raw: dict[str, Any], name: str) -> dict[str, Any]:
    return next(s for s in raw["service"] if s["name"] == name)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda r: _service(r, "tracking").update(port="8102"), "port must be of type int"),
        (lambda r: _service(r, "tracking").update(port=True), "port must be of type int"),
        (lambda r: _service(r, "tracking").update(port=70000), "outside 1-65535"),
        (lambda r: _service(r, "tracking").update(port=8101), "port 8101 is used more than once"),
        (lambda r: _service(r, "tracking").update(kind="cron"), "kind must be 'web' or 'worker'"),
        (lambda r: _service(r, "tracking").update(entrypoint="x"), "entrypoint 'x' is not defined"),
        (lambda r: _service(r, "tracking").update(issuer=True), "exactly one service"),
        (lambda r: _service(r, "tracking").update(colour="red"), "unknown key(s) colour"),
        (
            lambda r: _service(r, "tracking").update(colour="red", size=2),
            "service 'tracking': unknown key(s) colour, size",
        ),
        (lambda r: r.update(extra=1), "top level: unknown key(s) extra"),
        (lambda r: _service(r, "tracking").update(name=3), "[[service]] #2: name must be of type"),
        (lambda r: _service(r, "tracking").pop("routes"), "service 'tracking': routes is required"),
        (lambda r: _service(r, "tracking").update(owner="x"), "only workers have an owner"),
        (lambda r: r["environment"].update(lower="x"), "[environment]: lower must be an upper"),
        (lambda r: r.update(service=["x"]), "[[service]] #1: must be a table"),
        (lambda r: r.update(service="x"), "service must be an array of tables"),
        (
            lambda r: r["entrypoint"][0]["login"].update(x=1),
            "entrypoint 'platform' login: unknown key(s) x",
        ),
        (lambda r: _service(r, "tracking").update(module="a-b"), "not a dotted Python module"),
        (lambda r: _service(r, "tracking").update(routes=["api"]), "not a plain path prefix"),
        (lambda r: _service(r, "tracking").update(routes=["/a b"]), "not a plain path prefix"),
        (lambda r: _service(r, "tracking").update(routes=["/api/v1/login"]), "claimed by both"),
        (lambda r: _service(r, "tracking").update(secrets={"X": "rsa"}), "has kind 'rsa'"),
        (lambda r: _service(r, "tracking").update(env={"lower": "x"}), "upper-case name"),
        (lambda r: _service(r, "webhooks-worker").update(port=1), "a worker has no port"),
        (lambda r: _service(r, "webhooks-worker").update(owner="nope"), "is not a web service"),
        (lambda r: _service(r, "tracking").update(name="Tracking"), "must be lower-case"),
        (lambda r: r["service"].append(dict(_service(r, "tracking"))), "service name 'tracking'"),
        (lambda r: r["gateway"].update(client_max_body_size="lots"), "is not like '10m'"),
        (lambda r: _service(r, "webhooks").update(client_max_body_size="1g"), "not like '10m'"),
        (
            lambda r: _service(r, "webhooks-worker").update(client_max_body_size="1m"),
            "a worker has no client_max_body_size",
        ),
        (lambda r: r.pop("valkey"), "a [valkey] table is required"),
        (lambda r: r.pop("postgres"), "a [postgres] table is required"),
        (lambda r: r["postgres"].update(port=6399), "port 6399 is used more than once"),
        (lambda r: r["postgres"].update(fsync="off"), "[postgres]: unknown key(s) fsync"),
        (
            lambda r: r["valkey"].update(appendfsync="no"),
            "[valkey]: appendfsync must be one of always, everysec",
        ),
        (lambda r: r["valkey"].update(appendfsync=1), "appendfsync must be of type str"),
        (lambda r: r["entrypoint"][1].update(error_style="html"), "error_style must be"),
        (lambda r: _service(r, "tracking").update(env_prefix="svc"), "must be like 'SERVICE_'"),
        (
            lambda r: r["entrypoint"][0]["unimplemented"].append("/api/v1/runs"),
            "unimplemented /api/v1/runs overlaps tracking's route /api/v1/runs",
        ),
        (
            lambda r: r["entrypoint"][0]["unimplemented"].append("/api/v1/runs/x"),
            "overlaps tracking's route /api/v1/runs",
        ),
        (lambda r: r["entrypoint"][0]["unimplemented"].append("/api"), "overlaps"),
        (lambda r: r["entrypoint"][0]["unimplemented"].append("/"), "/ cannot be unimplemented"),
        (
            lambda r: r["entrypoint"][0]["unimplemented"].append("/api/v1/stack-deployment"),
            "unimplemented prefix '/api/v1/stack-deployment' is used more than once",
        ),
        (
            lambda r: r["entrypoint"][1]["login"].update(service="identity"),
            "login service 'identity' is not served here",
        ),
        (
            lambda r: r["entrypoint"][0]["login"].update(password_variable="ADMIN_PW"),
            "ADMIN_PW is not in identity's passthrough",
        ),
        (lambda r: r["entrypoint"][0]["login"].pop("command"), "login: command is required"),
        (lambda r: _service(r, "tracking").update(replicas=0), "a whole number from 1 to 9"),
        (lambda r: _service(r, "tracking").update(replicas=10), "a whole number from 1 to 9"),
        (lambda r: _service(r, "tracking").update(replicas=True), "replicas must be of type int"),
        (lambda r: _service(r, "tracking").update(replicas="2"), "replicas must be of type int"),
        (
            # tracking's second replica (8102 + 100) on webhooks' own port
            lambda r: (
                _service(r, "tracking").update(replicas=2),
                _service(r, "webhooks").update(port=8202),
            ),
            "port 8202 is used more than once",
        ),
    ],
)
def test_invalid_stack_is_one_clear_error(change, message):
    raw = raw_stack()
    change(raw)
    with pytest.raises(StackConfigError, match=None) as caught:
        parse_stack(raw)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_valkey_fsyncs_each_second_unless_the_stack_file_says_always():
    assert STACK.valkey_appendfsync == "everysec"
    raw = raw_stack()
    del raw["valkey"]["appendfsync"]
    assert parse_stack(raw).valkey_appendfsync == "everysec"
    raw["valkey"]["appendfsync"] = "always"
    assert parse_stack(raw).valkey_appendfsync == "always"


def test_stack_file_errors_name_the_file(tmp_path):
    bad = tmp_path / "stack.toml"
    bad.write_text("[gateway\n")
    with pytest.raises(StackConfigError, match=r"stack\.toml: not valid TOML"):
        load_stack(bad)


def test_port_offset_shifts_internal_ports_only():
    plan = plan_ports(STACK, 1000, {"platform": 8080, "agent": 8090})
    assert plan.valkey == 7399
    assert plan.postgres == 6499
    assert plan.services["identity"] == 9101
    assert plan.entrypoints == {"platform": 8080, "agent": 8090}


def test_colliding_ports_are_refused():
    with pytest.raises(UsageError, match="both listen on port 8101"):
        plan_ports(STACK, 0, {"platform": 8101, "agent": 8090})


def test_every_service_runs_once_unless_told_otherwise():
    assert {s.name: s.replicas for s in STACK.services} == dict.fromkeys(
        ["identity", "tracking", "webhooks", "webhooks-worker", "agent-accounts"], 1
    )
    assert STACK.service("tracking").replica_names() == ("tracking",)


def test_each_replica_of_a_web_service_listens_100_ports_above_the_one_before():
    stack = STACK.with_replicas({"tracking": 3, "webhooks-worker": 2})
    tracking = stack.service("tracking")
    assert tracking.replica_names() == ("tracking#1", "tracking#2", "tracking#3")
    assert tracking.replica_ports() == (8102, 8202, 8302)
    assert stack.service("webhooks-worker").replica_names() == (
        "webhooks-worker#1",
        "webhooks-worker#2",
    )
    assert stack.service("webhooks-worker").replica_ports() == ()
    plan = plan_ports(stack, 1000, {"platform": 8080, "agent": 8090})
    assert plan.services["tracking"] == 9102  # where the other services call it
    assert [plan.processes[f"tracking#{k}"] for k in (1, 2, 3)] == [9102, 9202, 9302]
    assert plan.processes["identity"] == 9101


def test_every_process_has_a_metrics_port_spaced_per_replica_as_its_port():
    stack = STACK.with_replicas({"tracking": 2, "webhooks-worker": 2})
    plan = plan_ports(stack, 1000, {"platform": 8080, "agent": 8090})
    assert plan.metrics == {
        "identity": 10101,
        "tracking#1": 10102,
        "tracking#2": 10202,
        "webhooks": 10103,
        "webhooks-worker#1": 10105,
        "webhooks-worker#2": 10205,
        "agent-accounts": 10104,
    }


def test_a_metrics_port_colliding_with_a_gateway_port_is_refused():
    with pytest.raises(UsageError, match="metrics of identity would both listen on port 9101"):
        plan_ports(STACK, 0, {"platform": 9101, "agent": 8090})


def test_a_replica_port_colliding_with_a_gateway_port_is_refused():
    with pytest.raises(UsageError, match="service tracking#2 would both listen on port 8202"):
        plan_ports(STACK.with_replicas({"tracking": 2}), 0, {"platform": 8202, "agent": 8090})


@pytest.mark.parametrize(
    ("argv", "environ", "expected"),
    [
        (["--replicas", "tracking=3"], {}, {"tracking": 3}),
        (["--replicas", "tracking=3,webhooks-worker=2"], {}, {"tracking": 3, "webhooks-worker": 2}),
        (
            [
                "--replicas",
                "tracking=3",
                "--replicas",
                " identity = 2 ",
                "--replicas",
                "tracking=2",
            ],
            {},
            {"tracking": 2, "identity": 2},
        ),
        (
            [],
            {"STACK_REPLICAS": "webhooks=2,webhooks-worker=4"},
            {"webhooks": 2, "webhooks-worker": 4},
        ),
        (["--replicas", "tracking=2"], {"STACK_REPLICAS": "webhooks=2"}, {"tracking": 2}),
        ([], {"STACK_REPLICAS": ""}, {}),
    ],
)
def test_replicas_come_from_the_flags_or_else_stack_replicas(tmp_path, argv, environ, expected):
    options = parse_options(["--data-dir", str(tmp_path), *argv], environ)
    counts = {s.name: s.replicas for s in options.stack.services if s.replicas != 1}
    assert counts == expected
    ports = options.ports.processes
    for name, count in expected.items():
        service = options.stack.service(name)
        if service.kind == "web":
            assert [ports[f"{name}#{k + 1}"] for k in range(count)] == list(service.replica_ports())


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("nope=2", "--replicas: no service named 'nope'"),
        ("tracking=0", "--replicas tracking: replicas must be a whole number from 1 to 9"),
        ("tracking=10", "--replicas tracking: replicas must be a whole number from 1 to 9"),
        ("tracking=two", "--replicas tracking: the count must be a whole number, not 'two'"),
        ("tracking", "--replicas takes NAME=N[,NAME=N ...], not 'tracking'"),
        ("tracking=2,", "--replicas takes NAME=N[,NAME=N ...], not 'tracking=2,'"),
        ("=2", "--replicas takes NAME=N"),
    ],
)
def test_bad_replicas_are_one_clear_error(tmp_path, value, message):
    for argv, environ in ((["--replicas", value], {}), ([], {"STACK_REPLICAS": value})):
        with pytest.raises(UsageError) as caught:
            parse_options(["--data-dir", str(tmp_path), *argv], environ)
        assert message in str(caught.value)


def test_flags_fall_back_to_stack_variables(tmp_path):
    options = parse_options(
        ["--agent-port", "9999"],
        {"STACK_DATA_DIR": str(tmp_path), "STACK_PLATFORM_PORT": "7070", "STACK_PORT_OFFSET": "5"},
    )
    assert options.data_dir == tmp_path
    assert options.ports.entrypoints == {"platform": 7070, "agent": 9999}
    assert options.ports.valkey == 6404


def test_secrets_are_created_once_with_mode_0600(tmp_path):
    first, notes = load_or_create(tmp_path, STACK)
    path = tmp_path / FILE_NAME
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert "generated" in notes[0]
    assert set(first.clients) == {"tracking", "webhooks", "agent-accounts"}
    assert len(first.generated["identity"]["SIGNING_KEY_ENCRYPTION_KEYS"]) == 44
    second, notes = load_or_create(tmp_path, STACK)
    assert (second, notes) == (first, [])
    assert second.clients == first.clients
    assert second.generated == first.generated
    assert first.clients["tracking"] not in repr(second)


def test_secrets_file_readable_by_others_is_repaired(tmp_path):
    load_or_create(tmp_path, STACK)
    (tmp_path / FILE_NAME).chmod(0o644)
    _, notes = load_or_create(tmp_path, STACK)
    assert stat.S_IMODE((tmp_path / FILE_NAME).stat().st_mode) == 0o600
    assert "mode is now 0600" in notes[0]


def test_corrupt_secrets_file_is_an_error_without_its_content(tmp_path):
    (tmp_path / FILE_NAME).write_text('{"version": 1, "server_id": "s3cr3t-value"}')
    with pytest.raises(SecretsError) as caught:
        load_or_create(tmp_path, STACK)
    assert "s3cr3t" not in str(caught.value)


def test_service_environment(tmp_path):
    options = parse_options(["--data-dir", str(tmp_path), "--port-offset", "100"], {})
    secrets, _ = load_or_create(tmp_path, STACK)
    launcher_env = {
        "PATH": "/bin",
        "DATABASE_URL": "postgresql://elsewhere",
        "DEFAULT_ADMIN_PASSWORD": "pw",
    }

    identity = service_environment(options, STACK.service("identity"), secrets, launcher_env)
    assert identity["DATABASE_URL"] == "postgresql+asyncpg://postgres@127.0.0.1:5599/identity"
    assert identity["REDIS_URL"] == "redis://127.0.0.1:6499/0"
    assert identity["JWKS_URL"] == "http://127.0.0.1:8201/.well-known/jwks.json"
    assert identity["DEFAULT_ADMIN_PASSWORD"] == "pw"
    assert json.loads(identity["SERVICE_CLIENTS"]) == secrets.clients
    assert "SERVICE_CLIENT_ID" not in identity

    worker = service_environment(options, STACK.service("webhooks-worker"), secrets, launcher_env)
    assert worker["DATABASE_URL"] == "postgresql+asyncpg://postgres@127.0.0.1:5599/webhooks"
    assert worker["SERVICE_CLIENT_ID"] == "webhooks"
    assert worker["SERVICE_CLIENT_SECRET"] == secrets.clients["webhooks"]
    assert "DEFAULT_ADMIN_PASSWORD" not in worker
    assert worker["PATH"] == "/bin"

    assert worker["REDIS_NAMESPACE"] == "platform"


def test_a_server_url_puts_every_services_database_on_that_server(tmp_path):
    server = "postgresql://app:s3cret@db.example:5433/postgres"
    options = parse_options(["--data-dir", str(tmp_path)], {"STACK_DATABASE_URL": server})
    assert options == parse_options(["--data-dir", str(tmp_path), "--database-url", server], {})
    secrets, _ = load_or_create(tmp_path, STACK)
    for name, database in [("tracking", "tracking"), ("agent-accounts", "agent_accounts")]:
        env = service_environment(options, STACK.service(name), secrets, {})
        url = env["DATABASE_URL" if name == "tracking" else "SERVICE_DATABASE_URL"]
        assert url == f"postgresql+asyncpg://app:s3cret@db.example:5433/{database}"


def test_a_services_own_database_url_wins_and_reaches_its_workers_too(tmp_path):
    options = parse_options(["--data-dir", str(tmp_path), "--database-url", "postgresql://s/p"], {})
    secrets, _ = load_or_create(tmp_path, STACK)
    own = {"WEBHOOKS_DATABASE_URL": "postgresql://hooks@h:5432/hooks_db"}
    for name in ("webhooks", "webhooks-worker"):
        env = service_environment(options, STACK.service(name), secrets, own)
        assert env["DATABASE_URL"] == "postgresql+asyncpg://hooks@h:5432/hooks_db"
    tracking = service_environment(options, STACK.service("tracking"), secrets, own)
    assert tracking["DATABASE_URL"] == "postgresql+asyncpg://s/tracking"


@pytest.mark.parametrize("url", ["sqlite:///x.db", "mysql://h/db"])
def test_a_database_url_that_is_not_postgresql_is_refused(tmp_path, url):
    with pytest.raises(UsageError, match="--database-url must name a PostgreSQL server"):
        parse_options(["--data-dir", str(tmp_path), "--database-url", url], {})


def test_services_learn_where_the_other_web_services_listen(tmp_path):
    options = parse_options(["--data-dir", str(tmp_path), "--port-offset", "100"], {})
    secrets, _ = load_or_create(tmp_path, STACK)
    for name in ("webhooks", "webhooks-worker"):
        env = service_environment(options, STACK.service(name), secrets, {})
        assert env["TRACKING_URL"] == "http://127.0.0.1:8202"
        assert env["WEBHOOK_SECRET_KEYS"] == secrets.generated["webhooks"]["WEBHOOK_SECRET_KEYS"]


def test_env_prefix_applies_to_every_setting_but_not_to_system_variables(tmp_path):
    options = parse_options(["--data-dir", str(tmp_path)], {})
    secrets, _ = load_or_create(tmp_path, STACK)
    agent = service_environment(options, STACK.service("agent-accounts"), secrets, {"PATH": "/b"})
    assert agent["PATH"] == "/b"
    assert agent["PYTHONUNBUFFERED"] == "1"
    assert agent["SERVICE_REDIS_NAMESPACE"] == "agent"
    assert agent["SERVICE_DATABASE_URL"].endswith("/agent_accounts")
    assert agent["SERVICE_SERVER_ID"] == secrets.server_id
    assert agent["SERVICE_SERVICE_CLIENT_ID"] == "agent-accounts"
    assert not {"REDIS_URL", "DATABASE_URL", "SERVER_ID"} & set(agent)
