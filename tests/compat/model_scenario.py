# mypy: ignore-errors
# (Runs inside the cached zenml 0.96.3 client environment, where zenml is installed.)
"""What the unmodified zenml 0.96.3 client does with models, in one client process:
a pipeline configured with ``Model(name=...)`` run twice (versions 1 and 2, each run
linked to its version, the step context seeing the model, the outputs linked); a stage
promoted and a run pinned to it (``version="production"``); then the ``zenml model`` and
``zenml model version`` CLI, each command invoked in this process (click's runner). It
emits one JSON document (``emit``, from the snippet prelude)."""

import uuid

from click.testing import CliRunner
from zenml import Model, get_step_context, pipeline, step
from zenml.cli.cli import cli
from zenml.client import Client

PREFIX = f"compat-{uuid.uuid4().hex[:8]}"
NAME = f"{PREFIX}-m1"


@step
def seen_model() -> str:
    model = get_step_context().model
    return f"{model.name}:{model.version}:{model.number}"


def run_with(model: Model):
    @pipeline(name=f"{PREFIX}-pipeline", model=model, enable_cache=False)
    def with_model() -> None:
        seen_model()

    return with_model()


def run_view(client: Client, run_id) -> dict:
    run = client.get_pipeline_run(run_id)
    version = run.model_version
    step_run = client.get_run_step(run.steps["seen_model"].id)
    return {
        "model_version": None if version is None else [version.name, version.number],
        "seen": run.steps["seen_model"].output.load(),
        "step_version": str(step_run.model_version_id),
        "step_nested": None if step_run.model_version is None else str(step_run.model_version.id),
        "run_version_id": None if version is None else str(version.id),
    }


def invoke(*args: str) -> dict:
    answer = CliRunner().invoke(cli, list(args), catch_exceptions=True)
    return {"code": answer.exit_code, "out": answer.output + repr(answer.exception or "")}


client = Client()
out: dict = {"runs": []}
for _ in range(2):
    out["runs"].append(run_view(client, run_with(Model(name=NAME)).id))
two = client.get_model_version(NAME, 2)
out["linked_runs"] = sorted(two.pipeline_run_ids.values(), key=str)
out["linked_artifacts"] = sorted(
    link.artifact_version.artifact.name
    for link in client.list_model_version_artifact_links(model_version_id=two.id).items
)
two.set_stage("production")
out["production"] = client.get_model_version(NAME, "production").number
out["pinned"] = run_view(client, run_with(Model(name=NAME, version="production")).id)
out["versions"] = [v.number for v in client.list_model_versions(NAME, sort_by="asc:number")]

cli_model = f"{PREFIX}-cli"
out["cli"] = {
    "register": invoke("model", "register", "-n", cli_model, "--license", "MIT", "--tag", "a"),
    "list": invoke("model", "list", "--name", cli_model),
    "update": invoke("model", "update", cli_model, "--description", "described", "-t", "b"),
}
updated = client.get_model(cli_model)
out["updated"] = [updated.description, sorted(t.name for t in updated.tags)]
client.create_model_version(cli_model)
client.create_model_version(cli_model, name="candidate")
out["cli"].update(
    {
        "version list": invoke("model", "version", "list", "--model", cli_model),
        "stage 1": invoke("model", "version", "update", cli_model, "1", "-s", "staging"),
        "stage 2 forced": invoke(
            "model", "version", "update", cli_model, "candidate", "-s", "staging", "--force"
        ),
        "version delete": invoke("model", "version", "delete", cli_model, "candidate", "-y"),
    }
)
out["stages"] = {v.name: v.stage for v in client.list_model_versions(cli_model)}
out["cli"]["delete"] = invoke("model", "delete", cli_model, "-y")
out["models after"] = [m.name for m in client.list_models(name=cli_model)]
emit(out)  # noqa: F821 (the snippet prelude's)
