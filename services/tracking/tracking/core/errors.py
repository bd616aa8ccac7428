"""The errors of named, project-scoped resources: each resource's ``XNotFound`` and
``XNameTaken`` subclass these, naming the resource in ``resource``."""

from __future__ import annotations

import uuid
from typing import ClassVar

from shared.errors import Conflict, NotFound


class ScopedNotFound(NotFound):
    resource: ClassVar[str] = "resource"

    def __init__(self, row_id: uuid.UUID) -> None:
        super().__init__(
            f"Unable to get {self.resource} with ID '{row_id}': "
            f"No {self.resource} with this ID found"
        )


class NameTaken(Conflict):
    resource: ClassVar[str] = "resource"

    def __init__(self, name: str, project: str, operation: str = "create") -> None:
        super().__init__(
            f"Unable to {operation} the requested {self.resource} with name '{name}': "
            f"Found another existing {self.resource} with the same name in the "
            f"'{project}' project."
        )
