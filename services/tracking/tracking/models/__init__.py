"""Tracking's tables. Importing this package registers them on ``SQLModel.metadata``.

Users live in identity's database: ``user_id`` columns hold the creator's id and have no
foreign key.
"""

from tracking.models.artifact import Artifact
from tracking.models.code_repository import CodeRepository
from tracking.models.project import Project
from tracking.models.stack import Stack, StackComponent, StackComposition
from tracking.models.tag import Tag, TagResource

__all__ = [
    "Artifact",
    "CodeRepository",
    "Project",
    "Stack",
    "StackComponent",
    "StackComposition",
    "Tag",
    "TagResource",
]
