"""``/schedules``: when pipelines run; workload tokens may be scoped to one."""

from __future__ import annotations

from shared.auth import ScopeKind
from shared.routing import ApiRoute
from tracking.core.auth import MANAGING_KINDS
from tracking.core.scoped import (
    ResourceRoutes,
    ScopedListQuery,
    create_handler,
    delete_handler,
    get_handler,
    list_handler,
    query_extras,
    update_handler,
)
from tracking.schedule.repository import SCHEDULES
from tracking.schedule.schemas import (
    ScheduleRequest,
    ScheduleResponse,
    ScheduleUpdate,
    schedule_response,
)
from tracking.schedule.service import ScheduleService

SCHEDULE = ResourceRoutes(
    path="/api/v1/schedules",
    id_param="schedule_id",
    label="Schedule",
    plural="Schedules",
    tag="schedules",
    request=ScheduleRequest,
    response=ScheduleResponse,
    list_query=SCHEDULES.query_model(extra=query_extras(ScopedListQuery)),
    update_request=ScheduleUpdate,
)


SCOPE = ScopeKind.SCHEDULE


def routes() -> list[ApiRoute]:
    return SCHEDULE.routes(
        list_=list_handler(ScheduleService, SCHEDULES, schedule_response),
        create=create_handler(
            ScheduleService, ScheduleRequest, schedule_response, kinds=MANAGING_KINDS
        ),
        get=get_handler(ScheduleService, "schedule_id", schedule_response, scope=SCOPE),
        update=update_handler(
            ScheduleService, "schedule_id", ScheduleUpdate, schedule_response, scope=SCOPE
        ),
        delete=delete_handler(ScheduleService, "schedule_id", scope=SCOPE),
    )
