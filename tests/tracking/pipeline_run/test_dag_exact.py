"""``GET /runs/{id}/dag`` of a 50-step dynamic run, byte for byte: every node and edge, in
order, with its metadata, as the run page has always been answered (a loaded input, a
manual output, a step not finished, step metadata and the configuration's type and group
included), so a faster builder cannot change a byte of what the dashboard reads."""

from __future__ import annotations

import math
import uuid
from typing import Any

import httpx
import orjson

from tests.tracking.artifact.support import Headers
from tests.tracking.artifact_version.support import Json, create_version
from tests.tracking.pipeline_run.test_dag import configured, snapshot_of
from tests.tracking.step_run.support import post_run, post_step
from tracking.pipeline_run.dag import DagStep, build_dag

STEPS = 50
LOADS = 10  # the step that also loads a version its spec does not name
SAVES = 20  # the step that also saves a version by hand
MEASURED = 5  # the step with a metadata value


def name_of(i: int) -> str:
    return f"step_{i:02d}"


def version_node(version: Json, node_id: str, name: str, save_type: str) -> Json:
    return {
        "node_id": node_id,
        "type": "artifact",
        "id": version["id"],
        "name": name,
        "metadata": {"type": "DataArtifact", "data_type": "builtins.int", "save_type": save_type},
    }


async def test_a_dynamic_runs_dag_is_answered_byte_for_byte(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    snapshot = await snapshot_of(tracking, auth, default_project, {}, is_dynamic=True)
    run, _ = await post_run(tracking, auth, snapshot, status="running")
    tag = uuid.uuid4().hex[:6]
    outs = [
        await create_version(tracking, auth, default_project, f"out-{tag}") for _ in range(STEPS)
    ]
    loaded = await create_version(tracking, auth, default_project, f"loaded-{tag}")
    saved = await create_version(
        tracking, auth, default_project, f"saved-{tag}", save_type="manual"
    )
    steps = []
    for i in range(STEPS):
        config = configured(
            name_of(i),
            [name_of(i - 1)] if i else [],
            {"x": {"step_name": name_of(i - 1), "output_name": "out"}} if i else {},
            ["out"],
        )
        if i % 7 == 3:
            config["config"]["step_type"] = "map"
            config["config"]["group"] = {"id": "g", "name": "fan-out", "type": "map"}
        last = i == STEPS - 1
        inputs: Json = {"x": [outs[i - 1]["id"]]} if i else {}
        if i == LOADS:
            inputs["extra"] = [loaded["id"]]
        outputs: Json = {} if last else {"out": [outs[i]["id"]]}
        if i == SAVES:
            outputs["kept"] = [saved["id"]]
        timing = {} if last else {"end_time": "2026-11-26T11:20:29", "status": "completed"}
        steps.append(
            await post_step(
                tracking,
                auth,
                run,
                name_of(i),
                dynamic_config=config,
                inputs=inputs,
                outputs=outputs,
                **timing,
            )
        )
    body = {
        "project": default_project["id"],
        "resources": [{"id": steps[MEASURED]["id"], "type": "step_run"}],
        "values": {"accuracy": 0.5, "loss": 0.25},
        "types": {"accuracy": "float", "loss": "float"},
    }
    response = await tracking.post("/api/v1/run-metadata", json=body, headers=auth)
    assert response.status_code == 200, response.text
    status = (await tracking.get(f"/api/v1/runs/{run['id']}", headers=auth)).json()["body"][
        "status"
    ]

    step_nodes: list[Json] = []
    artifact_nodes: list[Json] = []
    edges: list[Json] = []
    for i, step in enumerate(steps):
        name = name_of(i)
        node = f"step/{name}"
        metadata: Json = {}
        if i % 7 == 3:
            metadata["type"] = "map"
            metadata["group"] = {"id": "g", "name": "fan-out", "type": "map"}
        metadata["status"] = "running" if i == STEPS - 1 else "completed"
        metadata["start_time"] = "2026-11-26T11:20:26"
        if i != STEPS - 1:
            metadata["duration"] = 3.0
        if i == MEASURED:
            metadata["run_metadata"] = {"accuracy": 0.5}
        step_nodes.append(
            {"node_id": node, "type": "step", "id": step["id"], "name": name, "metadata": metadata}
        )
        if i == LOADS:
            loaded_node = f"{name}/inputs/manual/{loaded['id']}"
            artifact_nodes.append(version_node(loaded, loaded_node, "extra", "step_output"))
            edges.append(
                {
                    "source": loaded_node,
                    "target": node,
                    "metadata": {
                        "input_name": "extra",
                        "type": "manual",
                        "index": 0,
                        "chunk_index": None,
                        "chunk_size": None,
                    },
                }
            )
        if i:
            edges.append(
                {
                    "source": f"{name_of(i - 1)}/outputs/step_output/out",
                    "target": node,
                    "metadata": {
                        "input_name": "x",
                        "type": "step_output",
                        "index": 0,
                        "chunk_index": None,
                        "chunk_size": None,
                    },
                }
            )
        out_node = f"{name}/outputs/step_output/out"
        if i == SAVES:
            kept_node = f"{name}/outputs/manual/{saved['id']}"
            artifact_nodes.append(version_node(saved, kept_node, "kept", "manual"))
            edges.append(
                {
                    "source": node,
                    "target": kept_node,
                    "metadata": {"output_name": "kept", "type": "manual"},
                }
            )
        if i == STEPS - 1:  # running: its configured output, not made yet
            artifact_nodes.append(
                {"node_id": out_node, "type": "artifact", "id": None, "name": "out", "metadata": {}}
            )
        else:
            artifact_nodes.append(version_node(outs[i], out_node, "out", "step_output"))
        edges.append(
            {
                "source": node,
                "target": out_node,
                "metadata": {"output_name": "out", "type": "step_output"},
            }
        )
    expected = {
        "id": run["id"],
        "status": status,
        "nodes": [*step_nodes, *artifact_nodes],
        "edges": edges,
    }
    response = await tracking.get(
        f"/api/v1/runs/{run['id']}/dag",
        params={"include_step_metadata": "accuracy"},
        headers=auth,
    )
    assert response.status_code == 200, response.text
    assert response.json() == expected
    assert response.content == orjson.dumps(expected)


def test_metadata_shared_between_edges_keeps_each_values_json_type() -> None:
    """Edges with equal metadata share one dict; 1, 1.0 and true are equal in Python but
    not in JSON, and a list is no key: each edge still writes its own value."""
    chunks: list[Any] = [1, 1.0, True, [1], 1]
    steps: dict[str, Json] = {
        "make": {"spec": {}, "config": {"outputs": {"out": {}}}},
        **{
            f"read_{n}": {
                "spec": {
                    "upstream_steps": ["make"],
                    "inputs": {"x": {"step_name": "make", "output_name": "out", "chunk_index": c}},
                },
                "config": {},
            }
            for n, c in enumerate(chunks)
        },
    }
    dag = build_dag(uuid.uuid4(), "running", steps, False, {}, [], [], {})
    written = orjson.loads(orjson.dumps(dag))
    reads = [e["metadata"] for e in written["edges"] if "input_name" in e["metadata"]]
    assert [orjson.dumps(r["chunk_index"]) for r in reads] == [orjson.dumps(c) for c in chunks]


def test_a_stored_configuration_orjson_refuses_is_still_drawn() -> None:
    config = '{"spec": {"upstream_steps": []}, "config": {"group": {"w": NaN}}}'
    step = DagStep("1", "odd", "running", None, None, config)
    dag = build_dag(uuid.uuid4(), "running", {}, True, {}, [step], [], {})
    (node,) = dag["nodes"]
    assert node["node_id"] == "step/odd"
    assert math.isnan(node["metadata"]["group"]["w"])
