"""Hook invocation queries and the list declaration."""

from __future__ import annotations

import uuid
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from sqlalchemy import update
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from shared.listing import Kind, ListSpec, SortKey, base_fields, column_field
from shared.users import user_field
from tracking.core.repository import ScopedRepository
from tracking.models import HookInvocation, HookInvocationOutput, Logs

H = HookInvocation
_COLUMNS = (
    ("pipeline_run_id", Kind.UUID),
    ("step_run_id", Kind.UUID),
    ("hook_type", Kind.STRING),
    ("name", Kind.STRING),
    ("status", Kind.STRING),
    ("start_time", Kind.DATETIME),
    ("end_time", Kind.DATETIME),
)

HOOK_INVOCATIONS = ListSpec(
    resource="hook_invocation",
    id_column=col(H.id),
    fields=[
        *base_fields(col(H.id), col(H.created), col(H.updated)),
        user_field(col(H.user_id)),
        *(column_field(name, col(getattr(H, name)), kind) for name, kind in _COLUMNS),
    ],
    sort_keys=[
        SortKey("created", col(H.created)),
        SortKey("updated", col(H.updated)),
        SortKey("id", col(H.id)),
        SortKey("user", col(H.user_id)),
        *(SortKey(name, col(getattr(H, name))) for name, _ in _COLUMNS),
    ],
)


class HookInvocationRepository(ScopedRepository[Any]):
    """Invocations have an optional name: the base's reads, pages and deletes are used."""

    def __init__(self, session: AsyncSession) -> None:
        super().__init__(session, HookInvocation)

    async def add_outputs(
        self, invocation_id: uuid.UUID, outputs: Mapping[str, Sequence[uuid.UUID]]
    ) -> None:
        for name, version_ids in outputs.items():
            for version_id in dict.fromkeys(version_ids):
                self.session.add(
                    HookInvocationOutput(
                        hook_invocation_id=invocation_id, name=name, artifact_version_id=version_id
                    )
                )
        await self.session.flush()

    async def outputs_of(
        self, ids: Collection[uuid.UUID]
    ) -> dict[uuid.UUID, list[HookInvocationOutput]]:
        found: dict[uuid.UUID, list[HookInvocationOutput]] = {i: [] for i in ids}
        if not ids:
            return found
        query = (
            select(HookInvocationOutput)
            .where(col(HookInvocationOutput.hook_invocation_id).in_(list(ids)))
            .order_by(col(HookInvocationOutput.name))
        )
        for output in (await self.session.exec(query)).all():
            found[output.hook_invocation_id].append(output)
        return found

    async def take_logs(self, invocation_id: uuid.UUID, logs_id: uuid.UUID) -> None:
        """The logs become the invocation's (logs that do not exist are skipped, as in the
        reference)."""
        await self.session.exec(
            update(Logs).where(col(Logs.id) == logs_id).values(hook_invocation_id=invocation_id)
        )
