"""The lists of tags, builds, snapshots, triggers, hook invocations and flavors take every
query parameter ZenML 0.96.3's OpenAPI document gives them (copied here)."""

from __future__ import annotations

import httpx

COMMON = {"hydrate", "sort_by", "logical_operator", "page", "size", "id", "created", "updated"}
SCOPED = COMMON | {"scope_user", "user", "project"}
REFERENCE = {
    "/api/v1/tags": COMMON | {"scope_user", "user", "name", "color", "exclusive", "resource_type"},
    "/api/v1/pipeline_builds": SCOPED
    | {
        "project_name_or_id",
        "pipeline_id",
        "stack_id",
        "container_registry_id",
        "is_local",
        "contains_code",
        "zenml_version",
        "python_version",
        "checksum",
        "stack_checksum",
        "duration",
    },
    "/api/v1/pipeline_snapshots": SCOPED
    | {
        "project_name_or_id",
        "tags",
        "name",
        "named_only",
        "pipeline",
        "stack",
        "build_id",
        "schedule_id",
        "source_snapshot_id",
        "runnable",
        "deployable",
        "deployed",
        "trigger_id",
    },
    "/api/v1/triggers": SCOPED
    | {
        "name",
        "active",
        "is_archived",
        "flavor",
        "type",
        "next_occurrence",
        "concurrency",
        "pipeline_id",
        "snapshot_id",
    },
    "/api/v1/hook_invocations": SCOPED
    | {"pipeline_run_id", "step_run_id", "hook_type", "name", "status", "start_time", "end_time"},
    "/api/v1/flavors": COMMON
    | {"scope_user", "user", "name", "display_name", "type", "integration"},
}


async def test_lists_take_the_reference_parameters(tracking: httpx.AsyncClient) -> None:
    paths = (await tracking.get("/openapi.json")).json()["paths"]
    for path, wanted in REFERENCE.items():
        names = {p["name"] for p in paths[path]["get"]["parameters"]}
        assert names >= wanted, (path, wanted - names)
