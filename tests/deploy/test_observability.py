"""deploy/observability and its wiring: compose gives every process its metrics port and
the `observability` profile Prometheus, Grafana and Jaeger; the scrape configs find every
process of deploy/stack.toml; the alert rules and the dashboard are complete and name only
series the code exports."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
import yaml
from prometheus_client import REGISTRY
from prometheus_client.metrics_core import Metric

import shared.metrics  # noqa: F401  # registers the shared metrics
import webhooks.core.metrics  # noqa: F401  # registers the webhooks' and worker's
from deploy.config import load_stack
from webhooks.core.metrics import QueueCollector

REPO_ROOT = Path(__file__).resolve().parents[2]
OBSERVABILITY = REPO_ROOT / "deploy" / "observability"
DASHBOARDS = OBSERVABILITY / "grafana" / "dashboards"
PROVISIONING = OBSERVABILITY / "grafana" / "provisioning"
STACK = load_stack()
PROFILE = "observability"
PROFILE_SERVICES = {"prometheus", "grafana", "jaeger"}
# The one scrape job of both configs, which the rules and the dashboard select.
JOB = "platform"
PROMETHEUS_DATASOURCE = {"type": "prometheus", "uid": "prometheus"}
SEVERITIES = {"critical", "warning"}
# Series the rules read from kube-state-metrics on Kubernetes (none of the platform's own).
KUBE_STATE_METRICS = {"kube_pod_status_ready"}
# A series name in PromQL: the platform's, prometheus-client's process collector's, the
# scrape's own `up`, kube-state-metrics'.
SERIES = re.compile(r"(?<![\w:\"])(platform_\w+|process_\w+|kube_\w+|up)\b(?!\s*\()")
SUFFIXES = {
    "counter": ("_total",),
    "histogram": ("_bucket", "_count", "_sum"),
    "gauge": ("",),
}

Object = dict[str, Any]


def load_yaml(path: Path) -> Object:
    loaded = yaml.safe_load(path.read_text())
    assert isinstance(loaded, dict), path
    return loaded


def compose_services() -> dict[str, Object]:
    services: dict[str, Object] = load_yaml(REPO_ROOT / "docker-compose.yml")["services"]
    return services


def prometheus_config(name: str) -> Object:
    return load_yaml(OBSERVABILITY / name)


def alert_rules() -> list[Object]:
    groups = load_yaml(OBSERVABILITY / "alerts.yml")["groups"]
    return [rule for group in groups for rule in group["rules"]]


def dashboard() -> Object:
    loaded = json.loads((DASHBOARDS / "platform.json").read_text())
    assert isinstance(loaded, dict)
    return loaded


def panels(board: Object) -> Iterator[Object]:
    """Every panel of ``board``, those inside a collapsed row too, rows left out."""
    for panel in board["panels"]:
        if panel["type"] == "row":
            yield from panel.get("panels", [])
        else:
            yield panel


def dashboard_expressions() -> list[str]:
    board = dashboard()
    queries = [target["expr"] for panel in panels(board) for target in panel["targets"]]
    return queries + [variable["definition"] for variable in board["templating"]["list"]]


def sample_names(families: Iterable[Metric]) -> set[str]:
    """The series names a scrape shows for ``families`` (prometheus-client strips a
    counter's ``_total`` from its family's name)."""
    return {
        family.name + suffix for family in families for suffix in SUFFIXES.get(family.type, ("",))
    }


@pytest.fixture(scope="module")
def exported(redis_url: str) -> set[str]:
    """Every series name the services and the worker export: the default registry's (the
    shared and webhooks metrics, prometheus-client's process collector) and the worker's
    queue collector's, read from a real Redis."""
    queue = QueueCollector(redis_url, "test-observability:queue")
    try:
        names = sample_names(REGISTRY.collect()) | sample_names(queue.collect())
    finally:
        queue.redis.close()
    assert "platform_queue_oldest_job_age_seconds" in names  # Redis answered
    return names | {"up"}


def series(expression: str) -> set[str]:
    return set(SERIES.findall(expression))


# --- docker-compose.yml ---


@pytest.mark.parametrize("service", STACK.services, ids=lambda s: s.name)
def test_compose_serves_each_processs_metrics_on_its_stack_port_inside_the_network(service):
    compose = compose_services()[service.name]
    environment = compose["environment"]
    assert environment[f"{service.env_prefix}METRICS_PORT"] == str(service.metrics_port)
    assert environment[f"{service.env_prefix}METRICS_HOST"] == "0.0.0.0"  # noqa: S104
    # Never published on the host: only the gateway and the profile's UIs are.
    assert "ports" not in compose
    assert "expose" not in compose


@pytest.mark.parametrize("service", STACK.services, ids=lambda s: s.name)
def test_compose_exports_traces_only_when_an_otlp_endpoint_is_given(service):
    environment = compose_services()[service.name]["environment"]
    # OpenTelemetry's own variable (no prefix); empty unless set when compose runs.
    assert environment["OTEL_EXPORTER_OTLP_ENDPOINT"] == "${OTEL_EXPORTER_OTLP_ENDPOINT:-}"


def test_the_observability_profile_alone_starts_prometheus_grafana_and_jaeger():
    services = compose_services()
    for name, service in services.items():
        if name in PROFILE_SERVICES:
            assert service["profiles"] == [PROFILE], name
        else:
            assert "profiles" not in service, name


def test_the_profiles_images_are_pinned_and_their_ports_on_loopback_only():
    services = compose_services()
    for name in PROFILE_SERVICES:
        image = services[name]["image"]
        tag = image.rpartition(":")[2]
        assert re.fullmatch(r"v?\d+\.\d+\.\d+", tag), image
        for port in services[name].get("ports", []):
            assert port.startswith("127.0.0.1:"), (name, port)


def bind_mounts(service: Object) -> dict[str, Path]:
    """A compose service's mounts of repository files: container path -> file."""
    mounts = {}
    for volume in service.get("volumes", []):
        source, target, *_ = volume.split(":")
        if source.startswith("./"):
            mounts[target] = REPO_ROOT / source
    return mounts


def test_the_profile_mounts_files_of_the_repository():
    services = compose_services()
    for name in PROFILE_SERVICES:
        for target, source in bind_mounts(services[name]).items():
            assert source.exists(), (name, target, source)


def test_prometheus_in_compose_loads_its_config_and_every_rule_file():
    prometheus = compose_services()["prometheus"]
    mounts = bind_mounts(prometheus)
    config_path = next(
        PurePosixPath(arg.partition("=")[2])
        for arg in prometheus["command"]
        if arg.startswith("--config.file=")
    )
    assert mounts[str(config_path)] == OBSERVABILITY / "prometheus.yml"
    for rule_file in prometheus_config("prometheus.yml")["rule_files"]:
        # Relative to the config file's directory, in the container and in the repository.
        assert mounts[str(config_path.parent / rule_file)] == OBSERVABILITY / rule_file


def test_grafana_is_provisioned_with_prometheus_and_the_dashboards():
    grafana = compose_services()["grafana"]
    mounts = bind_mounts(grafana)
    assert mounts["/etc/grafana/provisioning"] == PROVISIONING
    datasources = load_yaml(PROVISIONING / "datasources" / "datasources.yml")["datasources"]
    prometheus = next(d for d in datasources if d["type"] == "prometheus")
    assert prometheus["uid"] == PROMETHEUS_DATASOURCE["uid"]
    assert prometheus["url"] == "http://prometheus:9090"
    assert "prometheus" in compose_services()
    jaeger = next(d for d in datasources if d["type"] == "jaeger")
    assert jaeger["url"] == "http://jaeger:16686"
    (provider,) = load_yaml(PROVISIONING / "dashboards" / "dashboards.yml")["providers"]
    assert mounts[provider["options"]["path"]] == DASHBOARDS


# --- the scrape configs ---


def test_compose_prometheus_scrapes_every_process_at_its_metrics_port():
    (job,) = prometheus_config("prometheus.yml")["scrape_configs"]
    assert job["job_name"] == JOB
    targets = {
        name: sd["port"]
        for sd in job["dns_sd_configs"]
        for name in sd["names"]
        if sd["type"] == "A"
    }
    assert targets == {s.name: s.metrics_port for s in STACK.services}
    assert {"source_labels": ["__meta_dns_name"], "target_label": "service"} in job[
        "relabel_configs"
    ]


def test_kubernetes_prometheus_scrapes_the_annotated_pods_of_the_platform_namespace():
    config = prometheus_config("prometheus-kubernetes.yml")
    assert config["rule_files"] == prometheus_config("prometheus.yml")["rule_files"]
    (job,) = config["scrape_configs"]
    assert job["job_name"] == JOB
    (discovery,) = job["kubernetes_sd_configs"]
    assert discovery == {"role": "pod", "namespaces": {"names": ["platform"]}}
    relabels = job["relabel_configs"]
    sources = {label for relabel in relabels for label in relabel.get("source_labels", [])}
    sources |= {relabel.get("target_label") for relabel in relabels}
    for annotation in ("scrape", "port", "path"):
        assert f"__meta_kubernetes_pod_annotation_prometheus_io_{annotation}" in sources
    targets = {relabel.get("target_label") for relabel in relabels}
    assert {"service", "namespace", "pod", "__metrics_path__"} <= targets


# --- alert rules ---


def test_every_alert_has_an_expression_a_duration_a_severity_and_an_explanation():
    rules = alert_rules()
    names = [rule["alert"] for rule in rules]
    assert len(names) == len(set(names))
    for rule in rules:
        assert rule["expr"].strip(), rule["alert"]
        assert re.fullmatch(r"\d+[smh]", rule["for"]), rule["alert"]
        assert rule["labels"]["severity"] in SEVERITIES, rule["alert"]
        assert rule["annotations"]["summary"], rule["alert"]
        assert rule["annotations"]["description"], rule["alert"]


def test_the_alerts_cover_the_queue_dead_letters_errors_and_readiness():
    expressions = " ".join(rule["expr"] for rule in alert_rules())
    for name in (
        "platform_queue_oldest_job_age_seconds",
        "platform_queue_up",
        "platform_worker_jobs_total",
        "platform_worker_executions_given_up_total",
        "platform_http_requests_total",
        "kube_pod_status_ready",
        "up",
    ):
        assert name in series(expressions), name


def test_every_alert_reads_only_series_the_platform_exports(exported):
    for rule in alert_rules():
        unknown = series(rule["expr"]) - exported - KUBE_STATE_METRICS
        assert not unknown, (rule["alert"], unknown)


def test_every_job_the_rules_and_the_dashboard_select_is_scraped():
    expressions = [rule["expr"] for rule in alert_rules()] + dashboard_expressions()
    jobs = {job for e in expressions for job in re.findall(r'job="([^"]*)"', e)}
    assert jobs == {JOB}


def test_the_alerts_are_documented_in_docs_operations():
    operations = (REPO_ROOT / "docs" / "operations.md").read_text()
    for rule in alert_rules():
        assert f"`{rule['alert']}`" in operations, rule["alert"]


# --- the dashboard ---


def test_the_dashboard_loads_without_an_import_prompt():
    board = dashboard()
    assert board["uid"]
    assert board["schemaVersion"] >= 39
    assert "__inputs" not in board
    nested = [panel for row in board["panels"] for panel in row.get("panels", [])]
    ids = [panel["id"] for panel in board["panels"] + nested]
    assert len(ids) == len(set(ids))
    for variable in board["templating"]["list"]:
        assert variable["datasource"] == PROMETHEUS_DATASOURCE, variable["name"]
    assert {v["name"] for v in board["templating"]["list"]} == {"service", "instance"}


def test_every_dashboard_panel_queries_the_provisioned_prometheus():
    for panel in panels(dashboard()):
        assert panel["datasource"] == PROMETHEUS_DATASOURCE, panel["title"]
        assert panel["targets"], panel["title"]
        refs = [target["refId"] for target in panel["targets"]]
        assert len(refs) == len(set(refs)), panel["title"]
        for target in panel["targets"]:
            assert target["datasource"] == PROMETHEUS_DATASOURCE, panel["title"]
            assert series(target["expr"]), (panel["title"], target["expr"])
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24, panel["title"]


def test_every_panel_follows_the_service_and_instance_variables():
    for panel in panels(dashboard()):
        for target in panel["targets"]:
            for selector in re.findall(
                r"(?<![\w:])(?:platform_\w+|process_\w+|up)\{([^}]*)\}", target["expr"]
            ):
                assert 'service=~"$service"' in selector, (panel["title"], target["expr"])
                assert 'instance=~"$instance"' in selector, (panel["title"], target["expr"])


def test_the_dashboard_reads_only_series_the_platform_exports(exported):
    for expression in dashboard_expressions():
        unknown = series(expression) - exported
        assert not unknown, (expression, unknown)


def test_the_dashboard_shows_every_platform_series(exported):
    shown = {name for e in dashboard_expressions() for name in series(e)}
    # Each platform metric, by its family (a histogram through any of its series).
    families = {re.sub(r"_(total|bucket|count|sum)$", "", name) for name in shown}
    for name in exported:
        if name.startswith("platform_"):
            assert re.sub(r"_(total|bucket|count|sum)$", "", name) in families, name
