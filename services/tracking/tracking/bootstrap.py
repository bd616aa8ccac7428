"""What exists from the first start: the `default` project and the `default` stack with a
local-filesystem artifact store (the zenml client needs both to connect)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from sqlalchemy.exc import IntegrityError
from sqlmodel import select
from sqlmodel.ext.asyncio.session import AsyncSession

from shared.db import SessionMaker, session_scope
from tracking.models import Project, Stack, StackComponent, StackComposition
from tracking.project.scope import DEFAULT_PROJECT

logger = logging.getLogger(__name__)

DEFAULT_STACK = "default"
ARTIFACT_STORE = "artifact_store"
ORCHESTRATOR = "orchestrator"


async def _ensure_defaults(session: AsyncSession, artifact_root: Path) -> None:
    if (await session.exec(select(Project).where(Project.name == DEFAULT_PROJECT))).first() is None:
        session.add(Project(name=DEFAULT_PROJECT, display_name=DEFAULT_PROJECT))
    if (await session.exec(select(Stack).where(Stack.name == DEFAULT_STACK))).first() is None:
        # The client accepts a stack only with an orchestrator and an artifact store.
        components = [
            StackComponent(
                name=DEFAULT_STACK,
                type=ARTIFACT_STORE,
                flavor="local",
                configuration={"path": str(artifact_root)},
            ),
            StackComponent(name=DEFAULT_STACK, type=ORCHESTRATOR, flavor="local"),
        ]
        stack = Stack(name=DEFAULT_STACK)
        session.add_all([*components, stack])
        await session.flush()
        session.add_all(
            [StackComposition(stack_id=stack.id, component_id=c.id) for c in components]
        )


def _prepared(root: Path) -> Path:
    """The store's root, made and absolute (the component records where it is)."""
    root.mkdir(parents=True, exist_ok=True)
    return root.resolve()


async def ensure_defaults(sessionmaker: SessionMaker, artifact_root: Path) -> None:
    """Create the defaults once; a replica that loses the race finds them made."""
    artifact_root = await asyncio.to_thread(_prepared, artifact_root)
    try:
        async with session_scope(sessionmaker) as session:
            await _ensure_defaults(session, artifact_root)
    except IntegrityError:
        logger.info("defaults were created by another replica")
