"""Artifact service rules below the HTTP layer."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy.exc import IntegrityError

from shared.db import session_scope
from tests.support.asgi import LifespanApp
from tracking.artifact.service import ArtifactAlreadyExists, ArtifactService
from tracking.models import Artifact


async def test_only_a_name_clash_becomes_a_409(tracking_app: LifespanApp) -> None:
    """A row breaking another constraint (here the project's foreign key) still fails
    loudly instead of being reported as a duplicate name."""
    orphan = Artifact(project_id=uuid.uuid4(), name="orphan")
    with pytest.raises(IntegrityError):
        async with session_scope(tracking_app.state["sessionmaker"]) as session:
            await ArtifactService(session).repository.save(orphan, ArtifactAlreadyExists("x", "y"))
