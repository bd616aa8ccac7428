"""The row protocol of named, project-scoped tables: what the list declarations
(:mod:`tracking.core.listing`) and the repository base (:mod:`tracking.core.repository`)
both build on. A leaf: it imports nothing of tracking's."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Protocol, TypeVar


class ScopedRow(Protocol):
    """The columns a named, project-scoped table has."""

    id: uuid.UUID
    project_id: uuid.UUID
    name: str
    user_id: uuid.UUID | None

    # Read-only here: a read row's are already in their wire form (see
    # ScopedRepository._columns), an instance's are datetimes.
    @property
    def created(self) -> dt.datetime | str: ...

    @property
    def updated(self) -> dt.datetime | str: ...


Row = TypeVar("Row", bound=ScopedRow)
