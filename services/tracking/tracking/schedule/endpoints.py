"""``/schedules``: when pipelines run; workload tokens may be scoped to one."""

from __future__ import annotations

from shared.routing import ApiRoute
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


def routes() -> list[ApiRoute]:
    return SCHEDULE.routes(
        list_=list_handler(ScheduleService, SCHEDULES, schedule_response),
        create=create_handler(ScheduleService, ScheduleRequest, schedule_response),
        get=get_handler(ScheduleService, "schedule_id", schedule_response),
        update=update_handler(ScheduleService, "schedule_id", ScheduleUpdate, schedule_response),
        delete=delete_handler(ScheduleService, "schedule_id"),
    )
