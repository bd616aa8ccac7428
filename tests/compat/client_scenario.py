# mypy: ignore-errors
# (Runs inside the cached zenml 0.96.3 client environment, where zenml is installed; the
# workspace's own environment has no zenml, so mypy cannot follow these imports.)
"""What the unmodified zenml 0.96.3 client does against a server, step by step.

Run by ``tests/compat/test_zenml_client.py`` with the client environment's interpreter and the
environment from ``tests.support.zenml_env.client_environment`` (``ZENML_STORE_URL``,
``ZENML_STORE_USERNAME``/``_PASSWORD``, a private ``ZENML_CONFIG_PATH``). It prints one JSON
document as its last line:

    {"prefix": "...", "project_id": "...", "requests": N, "http": ["GET <url> -> 200", ...],
     "steps": [{"section", "step", "call", "value"}...],
     "failures": [{"section", "step", "call", "error", "traceback", "http"}...]}

Sections (connect; artifacts; artifact versions; code repositories; pipeline runs; tags and
metadata; service accounts) are
independent after connect: a call that raises ends its section only, so one run shows every
failing area. Each step records what the client returned (names, ids, tags, ...); the test
judges the values. A failure names the public call, the exception and the last HTTP
exchanges (method, URL, status, body), recorded by wrapping ``requests``' transport adapter.
The zenml package itself is not modified; the only change to its runtime is a cap on the
sleep between retries.
"""

import json
import os
import sys
import traceback
import uuid
from typing import Any

import requests.adapters

HTTP_LOG: list = []


def _record_http() -> None:
    """Keep (method, url, status, body) of every request the client sends."""
    original = requests.adapters.HTTPAdapter.send
    if getattr(original, "compat_recording", False):
        return  # this file imported again as a module (the orchestrator loads its steps)

    def send(self, request, *args, **kwargs):
        try:
            response = original(self, request, *args, **kwargs)
        except Exception as exc:
            HTTP_LOG.append(
                {"method": request.method, "url": request.url, "status": None, "body": repr(exc)}
            )
            raise
        body = response.content[:800].decode("utf-8", "replace")
        HTTP_LOG.append(
            {
                "method": request.method,
                "url": request.url,
                "status": response.status_code,
                "body": body,
            }
        )
        return response

    send.compat_recording = True
    requests.adapters.HTTPAdapter.send = send


def _cap_retry_backoff(seconds: float = 1.0) -> None:
    """Cap the sleep between the client's retries (10 on 502/503/504, backoff factor 1: up to
    ~8 minutes against a dead upstream) so a broken server fails the test in seconds. Which
    requests are retried, and how often, stays the client's own policy."""
    from urllib3.util.retry import Retry

    original = Retry.__init__

    def __init__(self, *args, **kwargs):
        kwargs["backoff_max"] = min(kwargs.get("backoff_max", seconds), seconds)
        original(self, *args, **kwargs)

    Retry.__init__ = __init__


_record_http()
_cap_retry_backoff()

from zenml import pipeline  # noqa: E402
from zenml import step as zenml_step  # noqa: E402
from zenml.client import Client  # noqa: E402
from zenml.code_repositories import BaseCodeRepository  # noqa: E402
from zenml.config.source import Source, SourceType  # noqa: E402
from zenml.enums import ArtifactSaveType, ArtifactType  # noqa: E402
from zenml.models import ArtifactRequest, ArtifactVersionRequest  # noqa: E402
from zenml.utils import source_utils  # noqa: E402


class CompatCodeRepository(BaseCodeRepository):
    """A code repository implementation the client can load and validate without a network."""

    def login(self) -> None:
        pass

    def download_files(self, commit: str, directory: str, repo_sub_directory: str | None):
        raise NotImplementedError

    def get_local_context(self, path: str):
        return None


class StepFailed(Exception):
    pass


RESULT: dict = {"prefix": None, "project_id": None, "steps": [], "failures": []}


def step(section: str, name: str, call: str, func) -> Any:
    """Run one client call; on failure record it (with the last HTTP exchanges) and stop the
    section."""
    mark = len(HTTP_LOG)
    try:
        return func()
    except Exception as exc:
        RESULT["failures"].append(
            {
                "section": section,
                "step": name,
                "call": call,
                "error": f"{type(exc).__name__}: {exc}"[:2000],
                "traceback": traceback.format_exc(limit=6)[-3000:],
                "http": (HTTP_LOG[mark:] or HTTP_LOG)[-5:],
            }
        )
        raise StepFailed from None


def record(section: str, name: str, call: str, value: Any) -> None:
    RESULT["steps"].append({"section": section, "step": name, "call": call, "value": value})


def missing(func) -> dict:
    """Call ``func`` expecting it to fail because the entity is gone."""
    try:
        found = func()
    except Exception as exc:
        return {"raised": type(exc).__name__, "message": str(exc)[:300]}
    return {"raised": None, "found": str(getattr(found, "id", found))}


def artifact_view(artifact) -> dict:
    return {
        "id": str(artifact.id),
        "name": artifact.name,
        "project_id": str(artifact.project_id),
        "user": artifact.user.name if artifact.user else None,
        "tags": sorted(tag.name for tag in artifact.tags),
        "has_custom_name": artifact.has_custom_name,
        "latest_version_name": artifact.latest_version_name,
        "latest_version_id": (
            str(artifact.latest_version_id) if artifact.latest_version_id else None
        ),
    }


def repository_view(repo) -> dict:
    return {
        "id": str(repo.id),
        "name": repo.name,
        "project_id": str(repo.project_id),
        "user": repo.user.name if repo.user else None,
        "config": repo.config,
        "description": repo.description,
        "logo_url": repo.logo_url,
        "source": {"module": repo.source.module, "attribute": repo.source.attribute},
    }


def connect(client, prefix: str):
    """Log in (username/password from the environment); the active user, project and stack."""
    section = "connect"
    call = "Client().active_user / .active_project / .active_stack_model"
    user = step(section, "connect", call, lambda: client.active_user)
    project = step(section, "connect", call, lambda: client.active_project)
    stack = step(section, "connect", call, lambda: client.active_stack_model)
    RESULT["project_id"] = str(project.id)
    record(
        section,
        "connect",
        call,
        {
            "user": user.name,
            "project_id": str(project.id),
            "project": project.name,
            "stack": stack.name,
        },
    )
    return project


def artifacts(client, prefix: str, project) -> None:
    """List, create (tagged), get by name and id, filter, rename and re-tag, delete."""
    section = "artifacts"
    call = "Client().list_artifacts()"
    page = step(section, "list artifacts", call, lambda: client.list_artifacts())
    record(
        section,
        "list artifacts",
        call,
        {"total": page.total, "index": page.index, "names": [a.name for a in page.items]},
    )

    name = f"{prefix}-artifact"
    call = f"Client().zen_store.create_artifact(ArtifactRequest(name={name!r}, tags=['compat']))"
    created = step(
        section,
        "create artifact",
        call,
        lambda: client.zen_store.create_artifact(
            ArtifactRequest(project=project.id, name=name, tags=["compat"])
        ),
    )
    record(section, "create artifact", call, artifact_view(created))

    call = f"Client().get_artifact({name!r})"
    by_name = step(section, "get artifact by name", call, lambda: client.get_artifact(name))
    record(section, "get artifact by name", call, artifact_view(by_name))

    call = f"Client().get_artifact(UUID('{created.id}'))"
    by_id = step(section, "get artifact by id", call, lambda: client.get_artifact(created.id))
    record(section, "get artifact by id", call, artifact_view(by_id))

    call = f"Client().list_artifacts(name='startswith:{prefix}-art')"
    ours = step(
        section,
        "list artifacts by prefix",
        call,
        lambda: client.list_artifacts(name=f"startswith:{prefix}-art"),
    )
    record(
        section,
        "list artifacts by prefix",
        call,
        {"total": ours.total, "names": [a.name for a in ours]},
    )

    renamed = f"renamed-{prefix}"
    call = (
        f"Client().update_artifact({name!r}, new_name={renamed!r}, add_tags=['renamed'], "
        "remove_tags=['compat'])"
    )
    updated = step(
        section,
        "update artifact",
        call,
        lambda: client.update_artifact(
            name, new_name=renamed, add_tags=["renamed"], remove_tags=["compat"]
        ),
    )
    record(section, "update artifact", call, artifact_view(updated))

    call = f"Client().get_artifact({renamed!r}) / Client().get_artifact({name!r})"
    after = step(section, "get renamed artifact", call, lambda: client.get_artifact(renamed))
    record(
        section,
        "get renamed artifact",
        call,
        {"renamed": artifact_view(after), "old_name": missing(lambda: client.get_artifact(name))},
    )

    call = f"Client().delete_artifact({renamed!r})"
    step(section, "delete artifact", call, lambda: client.delete_artifact(renamed))
    left = step(
        section,
        "delete artifact",
        call,
        lambda: client.list_artifacts(name=f"startswith:{prefix}-art"),
    )
    record(
        section,
        "delete artifact",
        call,
        {"get_after": missing(lambda: client.get_artifact(created.id)), "left": left.total},
    )


def artifact_versions(client, prefix: str, project) -> None:
    """A version under a new artifact name creates the artifact; read both; delete cascades."""
    section = "artifact versions"
    versioned = f"{prefix}-versioned"
    call = (
        "Client().zen_store.create_artifact_version("
        f"ArtifactVersionRequest(artifact_name={versioned!r}, ...))"
    )
    version = step(
        section,
        "create artifact version",
        call,
        lambda: client.zen_store.create_artifact_version(
            ArtifactVersionRequest(
                project=project.id,
                artifact_name=versioned,
                type=ArtifactType.DATA,
                uri=f"/tmp/{prefix}/data",  # never read: no artifact store
                materializer=Source(
                    module="zenml.materializers.built_in_materializer",
                    attribute="BuiltInMaterializer",
                    type=SourceType.INTERNAL,
                ),
                data_type=Source(module="builtins", attribute="int", type=SourceType.BUILTIN),
                save_type=ArtifactSaveType.EXTERNAL,
                tags=["compat-version"],
            )
        ),
    )
    record(
        section,
        "create artifact version",
        call,
        {
            "id": str(version.id),
            "version": version.version,
            "artifact_id": str(version.artifact.id),
            "artifact_name": version.artifact.name,
            "project_id": str(version.project_id),
            "user": version.user.name if version.user else None,
            "tags": sorted(tag.name for tag in version.tags),
            "type": str(version.type.value),
            "save_type": str(version.save_type.value),
            "uri": version.uri,
        },
    )

    call = f"Client().get_artifact({versioned!r})"
    got = step(
        section, "get versioned artifact by name", call, lambda: client.get_artifact(versioned)
    )
    record(section, "get versioned artifact by name", call, artifact_view(got))

    call = f"Client().get_artifact_version({versioned!r})"
    got_version = step(
        section,
        "get artifact version by name",
        call,
        lambda: client.get_artifact_version(versioned),
    )
    record(
        section,
        "get artifact version by name",
        call,
        {"id": str(got_version.id), "version": got_version.version},
    )

    call = "Client().get_artifact_version(<version id>)"
    by_id = step(
        section,
        "get artifact version by id",
        call,
        lambda: client.get_artifact_version(version.id),
    )
    record(
        section,
        "get artifact version by id",
        call,
        {
            "id": str(by_id.id),
            "version": by_id.version,
            "artifact_name": by_id.artifact.name,
            "tags": sorted(tag.name for tag in by_id.tags),
        },
    )

    call = f"Client().delete_artifact({versioned!r})"
    step(section, "delete versioned artifact", call, lambda: client.delete_artifact(versioned))
    record(
        section,
        "delete versioned artifact",
        call,
        {
            "get_artifact_after": missing(lambda: client.get_artifact(got.id)),
            "get_version_after": missing(lambda: client.get_artifact_version(version.id)),
        },
    )


def code_repositories(client, prefix: str, project) -> None:
    """List, create (the public API, which validates the config locally), read back by name
    and id, update, delete."""
    section = "code repositories"
    call = "Client().list_code_repositories()"
    repos = step(section, "list code repositories", call, lambda: client.list_code_repositories())
    record(
        section,
        "list code repositories",
        call,
        {"total": repos.total, "names": [r.name for r in repos]},
    )

    repo_name = f"{prefix}-repo"
    config = {"url": f"https://git.example.invalid/{prefix}.git", "branch": "main"}
    source = source_utils.resolve(CompatCodeRepository)
    call = f"Client().create_code_repository(name={repo_name!r}, config=..., source=...)"
    repo = step(
        section,
        "create code repository",
        call,
        lambda: client.create_code_repository(
            name=repo_name,
            config=config,
            source=source,
            description="created by the compatibility test",
            logo_url="https://git.example.invalid/logo.png",
        ),
    )
    expected_source = {"module": source.module, "attribute": source.attribute}
    record(
        section,
        "create code repository",
        call,
        {**repository_view(repo), "expected_source": expected_source},
    )

    call = f"Client().get_code_repository({repo_name!r})"
    by_name = step(
        section,
        "get code repository by name",
        call,
        lambda: client.get_code_repository(repo_name),
    )
    record(section, "get code repository by name", call, repository_view(by_name))

    call = f"Client().get_code_repository(UUID('{repo.id}'))"
    by_id = step(
        section, "get code repository by id", call, lambda: client.get_code_repository(repo.id)
    )
    record(section, "get code repository by id", call, repository_view(by_id))

    call = "Client().list_code_repositories()"
    again = step(section, "list code repositories again", call, client.list_code_repositories)
    record(section, "list code repositories again", call, {"names": [r.name for r in again]})

    call = f"Client().update_code_repository({repo_name!r}, description='updated')"
    updated = step(
        section,
        "update code repository",
        call,
        lambda: client.update_code_repository(repo_name, description="updated"),
    )
    record(section, "update code repository", call, repository_view(updated))

    call = f"Client().delete_code_repository({repo_name!r})"
    step(section, "delete code repository", call, lambda: client.delete_code_repository(repo_name))
    record(
        section,
        "delete code repository",
        call,
        {"get_after": missing(lambda: client.get_code_repository(repo.id))},
    )


@zenml_step
def compat_make_number(seed: str) -> int:
    print(f"making a number from {seed}")  # noqa: T201 (the step's log, read back below)
    return len(seed)


@zenml_step
def compat_double(x: int) -> int:
    print(f"doubling {x}")  # noqa: T201
    return 2 * x


def compat_pipeline(seed: str) -> None:
    compat_double(compat_make_number(seed))


def run_view(run) -> dict:
    steps = run.steps
    return {
        "id": str(run.id),
        "name": run.name,
        "status": str(run.status.value),
        "pipeline": run.pipeline.name if run.pipeline else None,
        "stack": run.stack.name if run.stack else None,
        "steps": {name: str(s.status.value) for name, s in steps.items()},
        "original_steps": {
            name: str(s.original_step_run_id) if s.original_step_run_id else None
            for name, s in steps.items()
        },
        "step_ids": {name: str(s.id) for name, s in steps.items()},
        "output": steps["compat_double"].output.load() if "compat_double" in steps else None,
    }


def log_messages(client, step_run) -> dict:
    """What the step's logs hold, by source, read by the active stack's log store (from
    where the client wrote them) once it has flushed what it buffers."""
    log_store = client.active_stack.log_store
    log_store.flush(blocking=True)
    messages: dict = {}
    for logs in step_run.log_collection or []:
        entries = log_store.fetch(logs, limit=100)
        messages.setdefault(logs.source, []).extend(entry.message for entry in entries)
    return messages


def cli_runs(pipeline_id) -> dict:
    """``zenml pipeline runs list`` for the pipeline, as JSON, in a process of its own."""
    import subprocess

    argv = [sys.executable, "-c", "from zenml.cli.cli import cli; cli()", "pipeline", "runs",
            "list", "--pipeline_id", str(pipeline_id), "--output", "json"]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    text = done.stdout
    start = min((i for i in (text.find("{"), text.find("[")) if i >= 0), default=-1)
    if done.returncode != 0 or start < 0:
        raise RuntimeError(f"exit {done.returncode}: {text[-500:]} {done.stderr[-1500:]}")
    parsed = json.loads(text[start:])
    items = parsed.get("items", parsed) if isinstance(parsed, dict) else parsed
    return {"rows": items}


def pipeline_runs(client, prefix: str, project) -> None:
    """A two-step pipeline on the default stack (local orchestrator), run twice: the second
    run's steps are cached. Then what the API, the logs and the CLI show."""
    section = "pipeline runs"
    name = f"{prefix}-pipeline"
    runnable = pipeline(name=name, enable_cache=True)(compat_pipeline)
    first = step(section, "first run", f"{name}(seed=...)", lambda: runnable(seed=prefix))
    record(section, "first run", f"{name}(seed=...)", run_view(client.get_pipeline_run(first.id)))
    second = step(section, "second run", f"{name}(seed=...)", lambda: runnable(seed=prefix))
    call = f"Client().get_pipeline_run({second.id})"
    got = step(section, "second run", call, lambda: client.get_pipeline_run(second.id))
    record(section, "second run", call, run_view(got))

    call = f"Client().get_pipeline({name!r})"
    found = step(section, "get pipeline", call, lambda: client.get_pipeline(name))
    listed = step(
        section,
        "list runs",
        "Client().list_pipeline_runs(pipeline_id=...)",
        lambda: client.list_pipeline_runs(pipeline_id=found.id, sort_by="asc:created"),
    )
    record(
        section,
        "list runs",
        "Client().list_pipeline_runs(pipeline_id=...)",
        {
            "total": listed.total,
            "names": [r.name for r in listed.items],
            "statuses": [str(r.status.value) for r in listed.items],
            "latest_run_id": str(found.latest_run_id) if found.latest_run_id else None,
            "latest_run_status": found.latest_run_status,
        },
    )
    call = "Client().get_run_step(...).log_collection"
    double = step(
        section,
        "step logs",
        call,
        lambda: client.get_run_step(client.get_pipeline_run(first.id).steps["compat_double"].id),
    )
    record(
        section,
        "step logs",
        call,
        step(section, "step logs", call, lambda: log_messages(client, double)),
    )
    call = "zenml pipeline runs list --pipeline_id ... --output json"
    record(
        section,
        "cli runs list",
        call,
        step(section, "cli runs list", call, lambda: cli_runs(found.id)),
    )


@zenml_step
def compat_measured(seed: str) -> int:
    from zenml import log_metadata

    log_metadata(metadata={"compat_step_size": len(seed)})
    log_metadata(metadata={"compat_output_note": f"from {seed}"}, infer_artifact=True)
    return len(seed)


def compat_tagged_pipeline(seed: str) -> None:
    compat_measured(seed)


def names_of(tags) -> list:
    return sorted(tag.name for tag in tags or [])


def tags_and_metadata(client, prefix: str, project) -> None:
    """A run tagged by its pipeline's decorator whose step logs metadata for itself and for
    its output; then tags added to and removed from the run, the artifact and the version,
    and metadata logged on the run from outside: what the run, the step and the version
    then show."""
    from zenml import add_tags, log_metadata, remove_tags

    section = "tags and metadata"
    name = f"{prefix}-tagged"
    runnable = pipeline(name=name, enable_cache=False, tags=[f"{prefix}-decorated"])(
        compat_tagged_pipeline
    )
    run = step(section, "run", f"{name}(seed=...)", lambda: runnable(seed=prefix))
    run_id = run.id
    output = client.get_pipeline_run(run_id).steps["compat_measured"].output
    artifact_name = output.artifact.name

    call = "add_tags(run=...), add_tags(artifact=...), add_tags(artifact_version_id=...)"
    step(
        section, "add tags", call, lambda: add_tags(tags=[f"{prefix}-a", f"{prefix}-b"], run=run_id)
    )
    step(
        section, "add tags", call, lambda: add_tags(tags=[f"{prefix}-art"], artifact=artifact_name)
    )
    step(
        section,
        "add tags",
        call,
        lambda: add_tags(tags=[f"{prefix}-ver"], artifact_version_id=output.id),
    )
    call = "remove_tags(run=...)"
    step(section, "remove tags", call, lambda: remove_tags(tags=[f"{prefix}-b"], run=run_id))
    call = "log_metadata(run_id_name_or_prefix=...)"
    step(
        section,
        "log run metadata",
        call,
        lambda: log_metadata(metadata={"compat_run_note": "outside"}, run_id_name_or_prefix=run_id),
    )

    call = f"Client().get_pipeline_run({run_id})"
    got = step(section, "read back", call, lambda: client.get_pipeline_run(run_id))
    measured = got.steps["compat_measured"]
    version = client.get_artifact_version(output.id)
    artifact = client.get_artifact(artifact_name)
    record(
        section,
        "read back",
        call,
        {
            "run_id": str(run_id),
            "run_tags": names_of(got.tags),
            "run_metadata": dict(got.run_metadata),
            "step_metadata": dict(measured.run_metadata),
            "artifact_tags": names_of(artifact.tags),
            "version_tags": names_of(version.tags),
            "version_metadata": dict(version.run_metadata),
        },
    )
    call = "Client().list_pipeline_runs(tags=...)"
    tagged = step(
        section, "runs by tag", call, lambda: client.list_pipeline_runs(tags=[f"{prefix}-a"])
    )
    record(section, "runs by tag", call, {"ids": [str(r.id) for r in tagged.items]})
    call = "Client().list_tags(name=...)"
    listed = step(section, "list tags", call, lambda: client.list_tags(name=f"startswith:{prefix}"))
    record(section, "list tags", call, {"names": sorted(t.name for t in listed.items)})


def login_answer(client, key: str) -> dict:
    """What ``POST /login`` answers a ``zenml-api-key`` grant (as the client sends it) and, on
    a success, what ``/current-user`` then answers the token."""
    url = client.zen_store.url
    session = requests.Session()
    session.trust_env = False
    answer = session.post(
        f"{url}/api/v1/login", data={"grant_type": "zenml-api-key", "password": key}
    )
    view = {"login": answer.status_code}
    if answer.status_code == 200:
        view["token"] = answer.json()["access_token"]
    return view


def user_of(client, token: str) -> Any:
    session = requests.Session()
    session.trust_env = False
    answer = session.get(
        f"{client.zen_store.url}/api/v1/current-user",
        headers={"Authorization": f"Bearer {token}"},
    )
    return answer.json()["name"] if answer.status_code == 200 else answer.status_code


def cli_api_key_login(url: str, key: str) -> dict:
    """``zenml login <url> --api-key`` (the key on stdin) in a fresh configuration, then the
    active user as the client sees it with what the login stored."""
    import subprocess
    import tempfile

    config = tempfile.mkdtemp(prefix="compat-api-key-")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZENML_STORE_")}
    env["ZENML_CONFIG_PATH"] = config
    cli = [sys.executable, "-c", "from zenml.cli.cli import cli; cli()"]
    login = subprocess.run(
        [*cli, "login", url, "--api-key"],
        input=key + "\n",
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    if login.returncode != 0:
        raise RuntimeError(f"zenml login exit {login.returncode}: {login.stderr[-1500:]}")
    whoami = subprocess.run(
        [sys.executable, "-c", "from zenml.client import Client; print(Client().active_user.name)"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    if whoami.returncode != 0:
        raise RuntimeError(f"active user exit {whoami.returncode}: {whoami.stderr[-1500:]}")
    return {"user": whoami.stdout.strip().splitlines()[-1]}


def service_accounts(client, prefix: str, project) -> None:
    """A service account and an API key (shown once), ``zenml login --api-key`` with it, then
    the key rotated (the old one refused at once with no grace period) and deactivated (what it
    logged in refused too)."""
    section = "service accounts"
    name = f"{prefix}-sa"
    call = f"Client().create_service_account({name!r})"
    account = step(
        section, "create", call, lambda: client.create_service_account(name, description="ci")
    )
    call = "Client().create_api_key(...)"
    created = step(
        section, "create key", call, lambda: client.create_api_key(account.id, "ci", "for compat")
    )
    first_key = created.key
    call = "Client().get_api_key(...)"
    fetched = step(section, "get key", call, lambda: client.get_api_key(account.id, "ci"))
    record(
        section,
        "create",
        "create_service_account + create_api_key + get_api_key",
        {
            "active": account.active,
            "key_prefix": first_key[:7] if first_key else None,
            "key_shown_again": fetched.key,
            "key_active": fetched.active,
        },
    )
    call = "zenml login <url> --api-key"
    record(
        section,
        "cli login",
        call,
        step(
            section, "cli login", call, lambda: cli_api_key_login(client.zen_store.url, first_key)
        ),
    )
    before = login_answer(client, first_key)
    user_before = user_of(client, before["token"]) if "token" in before else None
    call = "Client().rotate_api_key(..., retain_period_minutes=0)"
    rotated = step(
        section,
        "rotate",
        call,
        lambda: client.rotate_api_key(account.id, "ci", retain_period_minutes=0),
    )
    new_key = rotated.key
    old = login_answer(client, first_key)
    new = login_answer(client, new_key)
    call = "Client().update_api_key(..., active=False)"
    step(section, "deactivate", call, lambda: client.update_api_key(account.id, "ci", active=False))
    record(
        section,
        "rotate and deactivate",
        "login with each key; the new key's token after deactivation",
        {
            "before_rotation": before["login"],
            "user_before": user_before,
            "old_key_after_rotation": old["login"],
            "new_key_after_rotation": new["login"],
            "keys_differ": new_key != first_key,
            "new_key_after_deactivation": login_answer(client, new_key)["login"],
            "token_after_deactivation": user_of(client, new["token"]) if "token" in new else None,
        },
    )
    call = "Client().delete_service_account(...)"
    step(section, "delete", call, lambda: client.delete_api_key(account.id, "ci"))
    step(section, "delete", call, lambda: client.delete_service_account(account.id))


def main() -> int:
    prefix = f"compat-{uuid.uuid4().hex[:10]}"
    RESULT["prefix"] = prefix
    try:
        client = Client()
        project = connect(client, prefix)
    except StepFailed:
        project = None  # nothing else can work without a project
    if project is not None:
        # COMPAT_SECTIONS (comma-separated) runs a subset; all of them by default.
        chosen = os.environ.get("COMPAT_SECTIONS")
        every = (
            artifacts,
            artifact_versions,
            code_repositories,
            pipeline_runs,
            tags_and_metadata,
            service_accounts,
        )
        wanted = {name.strip() for name in chosen.split(",")} if chosen else None
        for section in every:
            if wanted is not None and section.__name__.replace("_", " ") not in wanted:
                continue
            try:
                section(client, prefix, project)
            except StepFailed:
                continue  # recorded; the other sections are independent
            except Exception as exc:  # a bug in this script, not a failed client call
                RESULT["failures"].append(
                    {
                        "section": section.__name__,
                        "step": "(outside any client call)",
                        "call": "",
                        "error": f"{type(exc).__name__}: {exc}",
                        "traceback": traceback.format_exc(limit=6)[-3000:],
                        "http": HTTP_LOG[-5:],
                    }
                )
    RESULT["requests"] = len(HTTP_LOG)
    RESULT["http"] = [f"{e['method']} {e['url']} -> {e['status']}" for e in HTTP_LOG]
    sys.stdout.flush()
    print(json.dumps(RESULT, default=str))  # noqa: T201 (the result, read by the test)
    return 0


if __name__ == "__main__":
    sys.exit(main())
