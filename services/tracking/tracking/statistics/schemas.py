from __future__ import annotations

from pydantic import BaseModel


class ServerStatistics(BaseModel):
    """How many stacks, components and projects the server holds (every user sees every
    one: the open-source server has no RBAC)."""

    stacks: int
    components: int
    projects: int
