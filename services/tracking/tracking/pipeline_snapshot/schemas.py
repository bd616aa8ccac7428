"""Pipeline snapshots in the reference's shapes: what the client compiled, and how a
snapshot renders (alone, nested in runs, triggers and deployments)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Annotated, Any, NamedTuple

from pydantic import BaseModel, Field, WithJsonSchema, field_validator

from shared.envelope import Envelope
from shared.users import NestedUser
from tracking.core.rendering import EnvelopeShape
from tracking.core.schemas import (
    ProjectScopedBody,
    ScopedRequest,
    WorkspaceListQuery,
)
from tracking.pipeline.schemas import PipelineResponse, nested_pipeline
from tracking.stack.schemas import StackResponse, nested_stack
from tracking.tag.schemas import TagRef, TagResponse, nested_tag


class Snapshot(NamedTuple):
    """A snapshot's row with its pipeline's and its stack's (``None`` once deleted)."""

    snapshot: Any
    pipeline: Any
    stack: Any = None
    tags: Sequence[Any] = ()

    @property
    def user_id(self) -> uuid.UUID | None:
        return self.snapshot.user_id  # type: ignore[no-any-return]


class SnapshotListQuery(WorkspaceListQuery):
    pass


def snapshot_name(value: str | bool | None) -> str | bool | None:
    """The reference's rule for a snapshot's name, with its messages: a string that is
    not empty and at most 255 characters, ``false`` (no name) or null, never ``true``."""
    if isinstance(value, str):
        if not value:
            raise ValueError("Snapshot name cannot be empty.")
        if len(value) > 255:
            raise ValueError(
                f"Snapshot name `{value}` is too long. The maximum length is 255 characters."
            )
    elif value is True:
        raise ValueError("Snapshot name cannot be `True`.")
    return value


SnapshotName = Annotated[
    str | bool | None,
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "string", "minLength": 1, "maxLength": 255},
                {"type": "boolean", "const": False},
                {"type": "null"},
            ],
            "title": "The name of the snapshot (false: none).",
        }
    ),
]
"""A snapshot's name as :func:`snapshot_name` takes it, documented so (the reference's
``Union[str, bool]`` admits ``true``, which its validator refuses)."""


class PipelineSnapshotUpdate(BaseModel):
    """A new name (``false`` takes it off; ``replace`` takes it from the pipeline's snapshot
    that has it), a description (kept when empty) and tags to add or take off."""

    name: SnapshotName = None
    description: str | None = Field(default=None, max_length=65535)
    replace: bool | None = None
    add_tags: list[Annotated[str, Field(max_length=255)]] | None = None
    remove_tags: list[str] | None = None

    _name = field_validator("name")(snapshot_name)


class PipelineSnapshotRequest(ScopedRequest):
    """What the client compiled, kept as sent: the orchestrator runs the snapshot the
    server answers with. A code reference and ``replace`` are accepted and not kept;
    ``tags`` go on the snapshot, made when new. A ``false`` name is no name, as the
    reference reads it."""

    name: SnapshotName = None
    description: str | None = None
    source_code: str | None = None
    run_name_template: str = Field(max_length=255)
    pipeline_configuration: dict[str, Any] = Field(default_factory=dict)
    step_configurations: dict[str, dict[str, Any]] = Field(default_factory=dict)
    client_environment: dict[str, Any] = Field(default_factory=dict)
    client_version: str | None = Field(default=None, max_length=255)
    server_version: str | None = Field(default=None, max_length=255)
    pipeline_version_hash: str | None = Field(default=None, max_length=255)
    pipeline_spec: dict[str, Any] | None = None
    is_dynamic: bool = False
    stack: uuid.UUID
    pipeline: uuid.UUID
    build: uuid.UUID | None = None
    schedule: uuid.UUID | None = None
    tags: list[TagRef] | None = None
    code_path: str | None = None
    template: uuid.UUID | None = None
    source_snapshot: uuid.UUID | None = None

    _name = field_validator("name")(snapshot_name)

    def given_name(self) -> str | None:
        return self.name if isinstance(self.name, str) else None


class PipelineSnapshotResponseBody(ProjectScopedBody):
    runnable: bool
    deployable: bool
    is_dynamic: bool
    pipeline_id: uuid.UUID | None = None


class PipelineSnapshotResponseMetadata(BaseModel):
    description: str | None = None
    source_code: str | None = None
    run_name_template: str
    pipeline_configuration: dict[str, Any]
    step_configurations: dict[str, dict[str, Any]] = Field(default_factory=dict)
    client_environment: dict[str, Any] = Field(default_factory=dict)
    client_version: str | None = None
    server_version: str | None = None
    pipeline_version_hash: str | None = None
    pipeline_spec: dict[str, Any] | None = None
    code_path: str | None = None
    template_id: uuid.UUID | None = None
    source_snapshot_id: uuid.UUID | None = None
    config_template: dict[str, Any] | None = None
    config_schema: dict[str, Any] | None = None


class PipelineSnapshotResponseResources(BaseModel):
    user: NestedUser | None = None
    pipeline: PipelineResponse
    stack: StackResponse | None = None
    build: dict[str, Any] | None = None
    schedule: dict[str, Any] | None = None
    code_reference: dict[str, Any] | None = None
    deployment: dict[str, Any] | None = None
    tags: list[TagResponse] = Field(default_factory=list)
    latest_run_id: uuid.UUID | None = None
    latest_run_status: str | None = None
    latest_run_user: NestedUser | None = None
    visualizations: list[dict[str, Any]] = Field(default_factory=list)


class PipelineSnapshotResponse(
    Envelope[
        PipelineSnapshotResponseBody,
        PipelineSnapshotResponseMetadata,
        PipelineSnapshotResponseResources,
    ]
):
    name: str | None = None


SNAPSHOT = EnvelopeShape(PipelineSnapshotResponse)


def nested_snapshot(row: Any) -> dict[str, Any]:
    return SNAPSHOT.envelope.of(row, body=SNAPSHOT.body.of(row), metadata=None, resources=None)


def without_packages(environment: dict[str, Any] | None) -> dict[str, Any]:
    """An environment as answered: the installed packages (long) are left out, as the
    reference leaves them out unless asked."""
    return {k: v for k, v in (environment or {}).items() if k != "python_packages"}


def snapshot_response(item: Any, hydrate: bool, user: NestedUser | None) -> dict[str, Any]:
    """``item``: a :class:`Snapshot`."""
    resources: dict[str, Any] = {
        "user": user,
        "pipeline": nested_pipeline(item.pipeline),
        "stack": nested_stack(item.stack) if item.stack is not None else None,
        "tags": [nested_tag(tag) for tag in item.tags],
        "visualizations": [],
    }
    metadata = {"client_environment": without_packages(item.snapshot.client_environment)}
    return SNAPSHOT(item.snapshot, resources, hydrate=hydrate, metadata=metadata)
