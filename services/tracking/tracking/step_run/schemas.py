"""What the step page and a running step read of a step, in the reference's shapes."""

from __future__ import annotations

import datetime as dt
import uuid

from pydantic import BaseModel

from tracking.pipeline_run.schemas import ExecutionStatus


class StepHeartbeatResponse(BaseModel):
    """``latest_heartbeat`` carries its zone (``Z``), as the reference's does: unlike the
    times it reads back from its database, it sends the time it just took."""

    id: uuid.UUID
    status: ExecutionStatus
    latest_heartbeat: dt.datetime
    pipeline_run_status: ExecutionStatus | None = None
    heartbeat_enabled: bool
