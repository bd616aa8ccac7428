"""Resource pools, their subject policies and resource requests: the reference's
open-source server has no resource pool store (it is an implementation its settings name,
which the open-source server does not ship) and answers every operation with a 501; so
does this server."""

from __future__ import annotations

from typing import NoReturn

from shared.errors import PlatformError


class ResourcePoolsNotEnabled(PlatformError):
    status_code = 501
    wire_name = "NotImplementedError"

    def __init__(self) -> None:
        super().__init__("Resource pool functionality is not enabled")


class ResourcePoolService:
    def refuse(self) -> NoReturn:
        raise ResourcePoolsNotEnabled()
