"""``GET /runs/{id}/dag``: the run page's graph of steps and artifacts, for a static
pipeline (from its snapshot, before and after its steps ran) and a dynamic one (from the
steps that ran), in the reference's shape, read in a few queries however many steps."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

import httpx
from sqlalchemy import event, insert
from sqlalchemy.ext.asyncio import AsyncEngine

from shared.db import utcnow
from tests.support.asgi import LifespanApp
from tests.tracking.artifact.support import Headers
from tests.tracking.artifact_version.support import Json, create_version
from tests.tracking.pipeline_run.reference_shapes import check_shape
from tests.tracking.pipeline_run.support import create_pipeline, default_stack_id
from tests.tracking.step_run.support import post_run, post_step, put
from tracking.models import StepRun
from tracking.pipeline_run.dag import dag_fields


def configured(name: str, upstream: list[str], inputs: Json, outputs: list[str]) -> Json:
    """A step configuration as the client compiles it (``inputs``: name → InputSpec)."""
    source = {"module": "pipe", "attribute": name, "type": "user"}
    spec = {
        "source": source,
        "upstream_steps": upstream,
        "inputs": inputs,
        "invocation_id": name,
    }
    config: Json = {
        "name": name,
        "parameters": {},
        "substitutions": {},
        "outputs": {output: {"materializer_source": []} for output in outputs},
    }
    return {"spec": spec, "config": config}


STATIC = {
    "make_number": configured("make_number", [], {}, ["number"]),
    "double": configured(
        "double",
        ["make_number"],
        {"value": {"step_name": "make_number", "output_name": "number"}},
        ["doubled_{date}"],
    ),
}


async def snapshot_of(
    tracking: httpx.AsyncClient,
    auth: Headers,
    project: Json,
    steps: Json,
    *,
    is_dynamic: bool = False,
) -> Json:
    pipeline = await create_pipeline(tracking, auth, project, f"dag-{uuid.uuid4().hex[:6]}")
    body = {
        "project": project["id"],
        "run_name_template": "dag-{date}-{time}",
        "pipeline_configuration": {"name": pipeline["name"], "substitutions": {}},
        "step_configurations": steps,
        "is_dynamic": is_dynamic,
        "stack": await default_stack_id(tracking, auth),
        "pipeline": pipeline["id"],
    }
    response = await tracking.post("/api/v1/pipeline_snapshots", json=body, headers=auth)
    assert response.status_code == 200, response.text
    snapshot: Json = response.json()
    return snapshot


async def get_dag(tracking: httpx.AsyncClient, auth: Headers, run: Json, **params: Any) -> Json:
    response = await tracking.get(f"/api/v1/runs/{run['id']}/dag", params=params, headers=auth)
    assert response.status_code == 200, response.text
    dag: Json = response.json()
    check_shape("PipelineRunDAG", dag)
    return dag


def by_node(dag: Json) -> dict[str, Json]:
    return {node["node_id"]: node for node in dag["nodes"]}


def edges(dag: Json) -> set[tuple[str, str]]:
    return {(edge["source"], edge["target"]) for edge in dag["edges"]}


async def test_a_static_run_before_its_steps_shows_its_snapshots_steps_and_outputs(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    snapshot = await snapshot_of(tracking, auth, default_project, STATIC)
    run, _ = await post_run(tracking, auth, snapshot)
    dag = await get_dag(tracking, auth, run)
    assert dag["id"] == run["id"]
    assert dag["status"] == "initializing"
    nodes = by_node(dag)
    assert set(nodes) == {
        "step/make_number",
        "step/double",
        "make_number/outputs/step_output/number",
        "double/outputs/step_output/doubled_2026_11_26",
    }
    assert all(node["id"] is None for node in nodes.values())
    assert nodes["step/double"]["type"] == "step"
    assert nodes["make_number/outputs/step_output/number"]["type"] == "artifact"
    # The artifact links the two steps; there is no direct step-to-step edge.
    assert edges(dag) == {
        ("step/make_number", "make_number/outputs/step_output/number"),
        ("make_number/outputs/step_output/number", "step/double"),
        ("step/double", "double/outputs/step_output/doubled_2026_11_26"),
    }
    reads = next(e for e in dag["edges"] if e["target"] == "step/double")
    assert reads["metadata"]["input_name"] == "value"
    assert reads["metadata"]["type"] == "step_output"


async def test_a_static_run_after_its_steps_shows_them_and_the_versions_they_made(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    snapshot = await snapshot_of(tracking, auth, default_project, STATIC)
    run, _ = await post_run(tracking, auth, snapshot, status="running")
    number = await create_version(tracking, auth, default_project, f"n-{uuid.uuid4().hex[:6]}")
    make = await post_step(
        tracking, auth, run, "make_number", start_time="2026-11-26T11:20:26", status="running"
    )
    await put(
        tracking,
        auth,
        f"/api/v1/steps/{make['id']}",
        {
            "outputs": {"number": [number["id"]]},
            "status": "completed",
            "end_time": "2026-11-26T11:20:29",
        },
    )
    double = await post_step(tracking, auth, run, "double", inputs={"value": [number["id"]]})
    dag = await get_dag(tracking, auth, run)
    nodes = by_node(dag)
    produced = "make_number/outputs/step_output/number"
    assert nodes["step/make_number"]["id"] == make["id"]
    assert nodes["step/make_number"]["metadata"] == {
        "status": "completed",
        "start_time": "2026-11-26T11:20:26",
        "duration": 3.0,
    }
    assert nodes["step/double"]["metadata"]["status"] == "running"
    assert nodes[produced]["id"] == number["id"]
    assert nodes[produced]["metadata"] == {
        "type": "DataArtifact",
        "data_type": "builtins.int",
        "save_type": "step_output",
    }
    assert (produced, "step/double") in edges(dag)
    read = next(e for e in dag["edges"] if e["target"] == "step/double")
    assert read["metadata"] == {
        "input_name": "value",
        "type": "step_output",
        "index": 0,
        "chunk_index": None,
        "chunk_size": None,
    }
    # The running step's output is the configured one, not made yet.
    assert nodes["double/outputs/step_output/doubled_2026_11_26"]["id"] is None
    assert double["id"] == nodes["step/double"]["id"]


async def test_a_dynamic_run_shows_the_steps_that_ran_with_their_own_configuration(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    snapshot = await snapshot_of(tracking, auth, default_project, {}, is_dynamic=True)
    run, _ = await post_run(tracking, auth, snapshot, status="running")
    first = configured("load", [], {}, ["rows"])
    second = configured(
        "score_3", ["load"], {"rows": {"step_name": "load", "output_name": "rows"}}, []
    )
    rows = await create_version(tracking, auth, default_project, f"rows-{uuid.uuid4().hex[:6]}")
    await post_step(
        tracking,
        auth,
        run,
        "load",
        dynamic_config=first,
        status="completed",
        outputs={"rows": [rows["id"]]},
    )
    scored = await post_step(
        tracking, auth, run, "score_3", dynamic_config=second, inputs={"rows": [rows["id"]]}
    )
    dag = await get_dag(tracking, auth, run)
    assert edges(dag) == {
        ("step/load", "load/outputs/step_output/rows"),
        ("load/outputs/step_output/rows", "step/score_3"),
    }
    # The step page shows the configuration the step ran with.
    got = await tracking.get(f"/api/v1/steps/{scored['id']}", headers=auth)
    assert got.json()["metadata"]["spec"]["upstream_steps"] == ["load"]


async def test_step_nodes_show_the_metadata_keys_asked_for(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    snapshot = await snapshot_of(tracking, auth, default_project, STATIC)
    run, _ = await post_run(tracking, auth, snapshot, status="running")
    step = await post_step(tracking, auth, run, "make_number")
    body = {
        "project": default_project["id"],
        "resources": [{"id": step["id"], "type": "step_run"}],
        "values": {"accuracy": 0.9, "loss": 0.1},
        "types": {"accuracy": "float", "loss": "float"},
    }
    response = await tracking.post("/api/v1/run-metadata", json=body, headers=auth)
    assert response.status_code == 200, response.text
    dag = await get_dag(tracking, auth, run, include_step_metadata="accuracy")
    assert by_node(dag)["step/make_number"]["metadata"]["run_metadata"] == {"accuracy": 0.9}


async def test_configurations_not_in_the_clients_shape_draw_as_absent(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    odd = {"spec": {"upstream_steps": "a", "inputs": [1]}, "config": {"outputs": ["x"]}}
    static = {"odd": odd, "odder": {"spec": "x", "config": None}, "oddest": {}}
    snapshot = await snapshot_of(tracking, auth, default_project, static)
    run, _ = await post_run(tracking, auth, snapshot, status="running")
    await post_step(tracking, auth, run, "odd")
    dag = await get_dag(tracking, auth, run)
    assert set(by_node(dag)) == {"step/odd", "step/odder", "step/oddest"}
    dynamic = await snapshot_of(tracking, auth, default_project, {}, is_dynamic=True)
    run, _ = await post_run(tracking, auth, dynamic, status="running")
    await post_step(tracking, auth, run, "odd", dynamic_config=odd)
    assert set(by_node(await get_dag(tracking, auth, run))) == {"step/odd"}


async def test_a_dynamic_configuration_not_in_the_clients_shape_is_refused_with_422(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    snapshot = await snapshot_of(tracking, auth, default_project, {}, is_dynamic=True)
    run, _ = await post_run(tracking, auth, snapshot, status="running")
    body = {
        "project": default_project["id"],
        "name": "odd",
        "start_time": "2026-11-26T11:20:26",
        "status": "running",
        "pipeline_run_id": run["id"],
        "dynamic_config": {"spec": [], "config": 1},
    }
    response = await tracking.post("/api/v1/steps", json=body, headers=auth)
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"][:2] == ["body", "dynamic_config"]


async def test_the_dag_of_an_unknown_run_is_404_and_of_a_bad_id_422(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    missing = await tracking.get(f"/api/v1/runs/{uuid.uuid4()}/dag", headers=auth)
    assert missing.status_code == 404
    assert missing.json()["detail"][0] == "KeyError"
    bad = await tracking.get("/api/v1/runs/not-an-id/dag", headers=auth)
    assert bad.status_code == 422


STEPS = 1000


def chained(i: int) -> str:
    """The name of the chain's step ``i``: the last step's name sorts first, so the steps
    come back last first, and drawn in that order the chain is deeper than Python's
    recursion limit."""
    return f"step_{STEPS - i:05d}"


async def test_a_dynamic_run_of_a_thousand_steps_is_drawn_in_a_few_queries(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json, tracking_app: LifespanApp
) -> None:
    snapshot = await snapshot_of(tracking, auth, default_project, {}, is_dynamic=True)
    run, _ = await post_run(tracking, auth, snapshot, status="running")
    engine: AsyncEngine = tracking_app.state["engine"]
    now = utcnow()
    rows = [
        {
            "id": uuid.uuid4(),
            "project_id": uuid.UUID(default_project["id"]),
            "pipeline_run_id": uuid.UUID(run["id"]),
            "name": chained(i),
            "status": "completed",
            "start_time": now,
            "end_time": now + dt.timedelta(seconds=1),
            "parent_step_ids": [],
            "dag_config": dag_fields(
                configured(
                    chained(i),
                    [chained(i - 1)] if i else [],
                    {"x": {"step_name": chained(i - 1), "output_name": "out"}} if i else {},
                    ["out"],
                )
            ),
            "created": now,
            "updated": now,
        }
        for i in range(STEPS)
    ]
    async with engine.begin() as conn:
        await conn.execute(insert(StepRun.__table__), rows)  # type: ignore[attr-defined]
    seen: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        seen.append(statement)

    event.listen(engine.sync_engine, "before_cursor_execute", record)
    try:
        dag = await get_dag(tracking, auth, run)
    finally:
        event.remove(engine.sync_engine, "before_cursor_execute", record)
    assert len([n for n in dag["nodes"] if n["type"] == "step"]) == STEPS
    assert len(dag["edges"]) == 2 * STEPS - 1
    # The run, its snapshot, its steps, their links (and the transaction's own).
    assert len([s for s in seen if s.lstrip().upper().startswith("SELECT")]) <= 5, seen
