"""What each process of the real stack (deploy/stack.toml) is started with, and the
banner's logins, computed without starting anything."""

from __future__ import annotations

from pathlib import Path

import pytest

from deploy.local import postgres
from deploy.local.banner import banner as launcher_banner
from deploy.local.environment import metrics_environment, service_environment
from deploy.local.options import Options, parse_options
from deploy.local.plan import Plan, plan_processes
from deploy.local.secrets import StackSecrets

AGENT_PASSWORD = "SERVICE_SERVER_DEFAULT_ACCOUNT_PASSWORD"
KITARU_PASSWORD = "KITARU_SERVER_DEFAULT_ACCOUNT_PASSWORD"  # a kitaru operator's name


def options(tmp_path: Path, *argv: str) -> Options:
    return parse_options(["--data-dir", str(tmp_path), *argv], {})


def environment_of(options: Options, name: str, environ: dict[str, str]) -> dict[str, str]:
    stack = options.stack
    secrets = StackSecrets(
        server_id="00000000-0000-4000-8000-000000000000",
        clients={s.name: "secret" for s in stack.web_services},
        generated={},
    )
    return service_environment(options, stack.service(name), secrets, environ)


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({AGENT_PASSWORD: "documented"}, "documented"),
        ({"SERVER_DEFAULT_ACCOUNT_PASSWORD": "unprefixed"}, "unprefixed"),
        ({AGENT_PASSWORD: "documented", "SERVER_DEFAULT_ACCOUNT_PASSWORD": "x"}, "documented"),
        ({KITARU_PASSWORD: "kitaru's"}, "kitaru's"),
        ({KITARU_PASSWORD: "kitaru's", "SERVER_DEFAULT_ACCOUNT_PASSWORD": "x"}, "kitaru's"),
        ({AGENT_PASSWORD: "documented", KITARU_PASSWORD: "x"}, "documented"),
    ],
)
def test_the_agent_servers_first_password_is_taken_by_its_documented_name_too(
    tmp_path, environ, expected
):
    env = environment_of(options(tmp_path), "agent-accounts", environ)
    assert env[AGENT_PASSWORD] == expected
    assert "SERVER_DEFAULT_ACCOUNT_PASSWORD" not in env
    # A passthrough secret reaches only the service that asked for it.
    assert AGENT_PASSWORD not in environment_of(options(tmp_path), "identity", environ)


def test_webhooks_name_their_endpoint_url_after_the_gateways_platform_url(tmp_path):
    shifted = options(tmp_path, "--platform-port", "18080", "--listen", "0.0.0.0")  # noqa: S104
    for name in ("webhooks", "webhooks-worker"):
        env = environment_of(shifted, name, {})
        assert env["SERVER_API_URL"] == "http://127.0.0.1:18080/api/v1"


def test_a_server_api_url_set_for_the_launcher_wins(tmp_path):
    public = {"SERVER_API_URL": "https://platform.example/api/v1"}
    env = environment_of(options(tmp_path), "webhooks", public)
    assert env["SERVER_API_URL"] == "https://platform.example/api/v1"


def test_identity_names_the_gateways_platform_url_as_the_server_and_dashboard_url(tmp_path):
    shifted = options(tmp_path, "--platform-port", "18080", "--listen", "0.0.0.0")  # noqa: S104
    env = environment_of(shifted, "identity", {})
    assert env["SERVER_URL"] == "http://127.0.0.1:18080"
    assert "DASHBOARD_URL" not in env  # the server's, unless an operator sets it apart
    assert "SERVER_URL" not in environment_of(shifted, "tracking", {})


def banner(tmp_path: Path, environ: dict[str, str], fresh: set[str]) -> str:
    return "\n".join(launcher_banner(options(tmp_path), Plan(), environ, fresh))


def test_the_banner_names_both_logins_with_generated_passwords_at_a_first_start(tmp_path):
    text = banner(tmp_path, {}, fresh={"identity", "agent-accounts"})
    assert 'login: user "default", password printed once in identity\'s log above' in text
    assert 'login: user "default", password printed once in agent-accounts\'s log above' in text
    assert "curl -X POST http://127.0.0.1:8080/api/v1/login" in text
    assert "agent-run login http://127.0.0.1:8090 --username default" in text


def test_the_banner_names_the_variables_that_chose_the_passwords(tmp_path):
    environ = {"DEFAULT_ADMIN_PASSWORD": "Id3ntity", "SERVER_DEFAULT_ACCOUNT_PASSWORD": "Ag3nt"}
    text = banner(tmp_path, environ, fresh=set())
    assert "password from DEFAULT_ADMIN_PASSWORD (used when" in text
    assert f"password from {AGENT_PASSWORD} (used when" in text
    assert "Id3ntity" not in text
    assert "Ag3nt" not in text


def test_the_banner_sees_a_password_chosen_under_kitarus_name(tmp_path):
    text = banner(tmp_path, {KITARU_PASSWORD: "Ag3nt"}, fresh=set())
    assert f"password from {AGENT_PASSWORD} (used when" in text
    assert "Ag3nt" not in text


def test_the_banner_after_a_first_start_says_where_the_password_was_printed(tmp_path):
    text = banner(tmp_path, {}, fresh=set())
    assert f"printed in agent-accounts's log at the first start with {tmp_path}" in text
    assert f"(set {AGENT_PASSWORD} before a first start to choose it)" in text


def test_the_banner_names_the_embedded_postgresql_and_where_its_data_is(tmp_path):
    # As root, with a data dir its user cannot get through to, the cluster is kept
    # elsewhere (deploy.local.postgres.cluster_directory): the banner names where.
    text = banner(tmp_path, {}, fresh=set())
    assert (
        "  database: the embedded PostgreSQL at postgresql://postgres@127.0.0.1:5499/postgres "
        f"(data in {postgres.cluster_directory(tmp_path / 'postgres')})"
    ) in text


def test_the_banner_names_a_given_server_without_its_password(tmp_path):
    given = options(tmp_path, "--database-url", "postgresql://app:s3cret@db.example/postgres")
    text = "\n".join(
        launcher_banner(given, Plan(), {"TRACKING_DATABASE_URL": "postgresql://t/t"}, set())
    )
    assert "  database: PostgreSQL at postgresql://app:***@db.example/postgres; tracking on" in text
    assert "s3cret" not in text


def test_the_banner_says_when_every_service_has_its_own_database(tmp_path):
    own = {
        f"{name}_DATABASE_URL": f"postgresql://h/{name.lower()}"
        for name in ("IDENTITY", "TRACKING", "WEBHOOKS", "AGENT_ACCOUNTS")
    }
    text = banner(tmp_path, own, fresh=set())
    assert (
        "  database: identity, tracking, webhooks, agent-accounts on the database "
        "<SERVICE>_DATABASE_URL names"
    ) in text
    assert "embedded" not in text


def test_the_banner_lists_the_replicas_of_services_run_more_than_once(tmp_path):
    given = options(tmp_path, "--replicas", "tracking=2,webhooks-worker=3")
    text = "\n".join(launcher_banner(given, plan_processes(given), {}, set()))
    assert "  replicas: tracking#1-#2 on ports 8102, 8202; webhooks-worker#1-#3\n" in text
    once = options(tmp_path)
    assert "replicas:" not in "\n".join(launcher_banner(once, plan_processes(once), {}, set()))


def test_the_banner_lists_each_processs_metrics_port(tmp_path):
    given = options(tmp_path, "--replicas", "tracking=2")
    text = "\n".join(launcher_banner(given, plan_processes(given), {}, set()))
    assert (
        "  metrics (/metrics, not through the gateway): identity :9101, tracking#1 :9102, "
        "tracking#2 :9202, webhooks :9103, agent-accounts :9104, webhooks-worker :9105\n"
    ) in text


def test_each_replica_gets_its_own_metrics_port_with_the_services_prefix(tmp_path):
    given = options(tmp_path, "--replicas", "webhooks-worker=2", "--port-offset", "5")
    stack = given.stack
    worker = stack.service("webhooks-worker")
    assert [metrics_environment(given, worker, n) for n in worker.replica_names()] == [
        {"METRICS_PORT": "9110"},
        {"METRICS_PORT": "9210"},
    ]
    agent = stack.service("agent-accounts")
    assert metrics_environment(given, agent, "agent-accounts") == {"SERVICE_METRICS_PORT": "9109"}


def test_other_services_call_a_replicated_service_at_its_first_replica(tmp_path):
    given = options(tmp_path, "--replicas", "identity=2,tracking=3")
    env = environment_of(given, "webhooks", {})
    assert env["TRACKING_URL"] == "http://127.0.0.1:8102"
    assert env["JWKS_URL"] == "http://127.0.0.1:8101/.well-known/jwks.json"


@pytest.mark.parametrize("name", ["tracking", "webhooks-worker", "agent-accounts"])
def test_opentelemetry_settings_reach_every_process_but_its_name(tmp_path, name):
    environ = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318",
        "OTEL_TRACES_SAMPLER": "parentbased_traceidratio",
        "OTEL_SERVICE_NAME": "everything",
    }
    env = environment_of(options(tmp_path), name, environ)
    assert env["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://127.0.0.1:4318"
    assert env["OTEL_TRACES_SAMPLER"] == "parentbased_traceidratio"
    assert "OTEL_SERVICE_NAME" not in env
