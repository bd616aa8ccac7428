"""``POST /runs/statistics``: a project's runs, filtered as the runs list filters them,
grouped and aggregated in one SQL statement (the reference's ``RunStatisticsRequest``).

Groups and metrics are named by the caller; the statement labels them by position
(``g0``, ``m0``), so a name never reaches the SQL. A run counts once per group (a run with
two tags in both tag groups); per-run values come from correlated subqueries on the
filtered runs only (steps by ``(pipeline_run_id, name)``, metadata by its unique key),
never from an aggregate over every step of the database."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, model_validator
from sqlalchemy import Numeric, Select, case, cast, distinct, extract, func
from sqlalchemy import select as sa_select
from sqlalchemy.sql.elements import ColumnElement
from sqlmodel import col
from sqlmodel.ext.asyncio.session import AsyncSession

from shared.db import core_execute
from shared.errors import RequestValidationFailed
from shared.listing import Kind, Listing, ListParams, listing_of, where_clause
from shared.routing import validate_json
from tracking.core.service import ScopedService
from tracking.models import (
    PipelineRun,
    PipelineSnapshot,
    RunMetadata,
    StepRun,
    StepRunArtifact,
    Tag,
    TagResource,
)
from tracking.pipeline_run.repository import METADATA_RESOURCE, RUNS, TAG_RESOURCE, RunRepository
from tracking.pipeline_run.schemas import ExecutionStatus

Scalar = str | int | float | bool | None


class StatisticsTimeGranularity(StrEnum):
    HOUR = "hour"
    DAY = "day"
    WEEK = "week"
    MONTH = "month"


class StatisticsAggregation(StrEnum):
    AVG = "avg"
    SUM = "sum"
    MIN = "min"
    MAX = "max"


_NAME = Field(min_length=1, description="The key of this value in the response.")


class SimpleGrouping(BaseModel):
    name: str = _NAME
    type: Literal[
        "status", "pipeline", "snapshot", "source_snapshot", "stack", "trigger", "user", "tag"
    ]


class TimeGrouping(BaseModel):
    """Buckets of the runs' start times, in UTC (a week starts on its Monday)."""

    name: str = _NAME
    type: Literal["time"]
    granularity: StatisticsTimeGranularity


class MetadataGrouping(BaseModel):
    name: str = _NAME
    type: Literal["metadata"]
    metadata_key: str


class SimpleMetric(BaseModel):
    name: str = _NAME
    aggregation: StatisticsAggregation
    source: Literal["duration", "step_count", "cached_step_count", "output_artifact_count"]


class MetadataMetric(BaseModel):
    name: str = _NAME
    aggregation: StatisticsAggregation
    source: Literal["metadata"]
    metadata_key: str


Grouping = SimpleGrouping | TimeGrouping | MetadataGrouping
Metric = SimpleMetric | MetadataMetric


# The JSON values a filter of a kind also takes for its plain equality (as the reference's
# ``PipelineRunFilter`` takes ``Union[int, str]`` and ``Union[bool, str]``), beside text.
_JSON_VALUES: dict[Kind, tuple[type, dict[str, str]]] = {
    Kind.INT: (int, {"type": "integer"}),
    Kind.BOOL: (bool, {"type": "boolean"}),
}


def _document_filter(schema: dict[str, Any]) -> None:
    """The filter's keys as :func:`filter_listing` takes them, each with the runs list's
    query form of its parameter (an integer or boolean filter also as that JSON value; a
    filter also as a list of them: one condition each), or null for none; any other key is
    refused."""
    query = RUNS.query_model().model_json_schema()["properties"]
    none = {"type": "null"}
    uuid_text = {"type": "string", "format": "uuid"}
    properties: dict[str, Any] = {
        "project": {"anyOf": [{"type": "string"}, none]},
        "scope_user": {"anyOf": [uuid_text, none]},
    }
    for name, parameter in query.items():
        one = {k: v for k, v in parameter.items() if k not in ("title", "default", "anyOf")}
        kinds = [k for k in parameter.get("anyOf", [{}]) if k != none]
        if name in _LIST_PARAMS:
            forms = [{**one, **kind} for kind in kinds]
        elif one.get("type") == "array":
            forms = [one["items"], one]
        else:
            items = [{**one, **kind} for kind in kinds]
            field = RUNS.field(name)
            if field is not None and field.kind in _JSON_VALUES:
                items.append(_JSON_VALUES[field.kind][1])
            forms = [*items, {"type": "array", "items": {"anyOf": items}}]
        properties[name] = {"anyOf": [*forms, none]}
    schema.update(properties=properties, additionalProperties=False)


class RunStatisticsRequest(BaseModel):
    filter: dict[str, Any] = Field(
        description="The runs list's filter (``PipelineRunFilter``), applied before grouping.",
        json_schema_extra=_document_filter,
    )
    groupings: list[Annotated[Grouping, Field(discriminator="type")]] = Field(default_factory=list)
    metrics: list[Annotated[Metric, Field(discriminator="source")]] = Field(default_factory=list)
    max_groups: int = Field(default=1000, gt=0, le=10_000)

    @model_validator(mode="after")
    def _names_unique(self) -> RunStatisticsRequest:
        for what, names in (
            ("grouping", [g.name for g in self.groupings]),
            ("metric", [m.name for m in self.metrics]),
        ):
            if len(names) != len(set(names)):
                raise ValueError(f"Duplicate {what} names are not allowed.")
        if sum(isinstance(g, TimeGrouping) for g in self.groupings) > 1:
            raise ValueError("At most one time grouping is allowed.")
        return self


class RunStatisticsGroup(BaseModel):
    group_keys: dict[str, Scalar] = Field(default_factory=dict)
    metrics: dict[str, float | None] = Field(default_factory=dict)
    run_count: int


class RunStatisticsResponse(BaseModel):
    """Groups by time bucket ascending with a time grouping, else by run count descending."""

    groups: list[RunStatisticsGroup] = Field(default_factory=list)
    truncated: bool = False


_LIST_PARAMS = frozenset(ListParams.model_fields)
_SCOPE = frozenset({"project", "scope_user"})


def _texts(key: str, kind: Kind, value: Any) -> list[str]:
    """A filter's values as query texts: text as it is, the JSON values its kind also
    takes (:data:`_JSON_VALUES`) as their query form; 422 on any other."""
    texts = []
    taken = _JSON_VALUES.get(kind)
    for item in value if isinstance(value, list) else [value]:
        if isinstance(item, str):
            texts.append(item)
        elif taken is not None and type(item) is taken[0]:
            texts.append(str(item).lower() if kind is Kind.BOOL else str(item))
        else:
            also = f" or {taken[1]['type']}" if taken else ""
            message = f"Run statistics' '{key}' filter takes text{also} values."
            raise RequestValidationFailed.single(["body", "filter", key], message)
    return texts


def filter_listing(raw: Mapping[str, Any]) -> Listing:
    """The filter as the runs list reads its query: the list's own parameters, its
    declared filters (a list value is one condition per item, as repeated parameters);
    any other filter given a value is refused (422) rather than ignored."""
    location = ("body", "filter")
    params = {k: v for k, v in raw.items() if k in _LIST_PARAMS and v is not None}
    # As a JSON body is read: ``"true"`` is no boolean, ``"2"`` no page.
    parsed = validate_json(json.dumps(params).encode(), ListParams, location)
    values: dict[str, list[str]] = {}
    for key, value in raw.items():
        if value is None or key in _LIST_PARAMS or key in _SCOPE:
            continue
        field = RUNS.field(key)
        if field is None:
            message = f"Run statistics can not be filtered by '{key}'."
            raise RequestValidationFailed.single([*location, key], message)
        values[key] = _texts(key, field.kind, value)
    return listing_of(RUNS, parsed, values, location)


_RUNS = PipelineRun.__table__  # type: ignore[attr-defined]
_SNAPSHOTS = PipelineSnapshot.__table__  # type: ignore[attr-defined]
# A JSON number's text (metadata values are kept as JSON text).
_JSON_NUMBER = r"^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?$"
_BUCKETS = {
    StatisticsTimeGranularity.HOUR: "YYYY-MM-DD HH24:00:00",
    StatisticsTimeGranularity.DAY: "YYYY-MM-DD",
    StatisticsTimeGranularity.WEEK: "YYYY-MM-DD",
    StatisticsTimeGranularity.MONTH: "YYYY-MM-01",
}
_AGGREGATES: dict[StatisticsAggregation, Any] = {
    StatisticsAggregation.AVG: func.avg,
    StatisticsAggregation.SUM: func.sum,
    StatisticsAggregation.MIN: func.min,
    StatisticsAggregation.MAX: func.max,
}
_SIMPLE = {
    "status": _RUNS.c.status,
    "pipeline": _RUNS.c.pipeline_id,
    "snapshot": _RUNS.c.snapshot_id,
    "source_snapshot": _SNAPSHOTS.c.source_snapshot_id,
    "stack": _SNAPSHOTS.c.stack_id,
    "trigger": _RUNS.c.trigger_id,
    "user": _RUNS.c.user_id,
}


def _step_value(source: str) -> ColumnElement[Any]:
    """A run's number of steps (by name, as a retried step counts once), of cached
    steps, or of the artifact versions its steps produced."""
    if source == "step_count":
        query = sa_select(func.count(distinct(col(StepRun.name))))
    elif source == "cached_step_count":
        cached = case((col(StepRun.status) == ExecutionStatus.CACHED.value, col(StepRun.name)))
        query = sa_select(func.count(distinct(cached)))
    else:
        query = (
            sa_select(func.count(distinct(col(StepRunArtifact.artifact_version_id))))
            .join(StepRun, col(StepRun.id) == col(StepRunArtifact.step_id))
            .where(col(StepRunArtifact.direction) == "output")
        )
    return query.where(col(StepRun.pipeline_run_id) == _RUNS.c.id).scalar_subquery()


def _metadata_value(key: str) -> ColumnElement[Any]:
    """The run's value of ``key`` (JSON text; one per key and run)."""
    return (
        sa_select(col(RunMetadata.value))
        .where(
            col(RunMetadata.resource_type) == METADATA_RESOURCE,
            col(RunMetadata.resource_id) == _RUNS.c.id,
            col(RunMetadata.key) == key,
        )
        .scalar_subquery()
    )


def _time_bucket(granularity: StatisticsTimeGranularity) -> ColumnElement[Any]:
    utc = func.timezone("UTC", _RUNS.c.start_time)
    return func.to_char(func.date_trunc(granularity.value, utc), _BUCKETS[granularity])


def _decode_metadata(raw: Any) -> Scalar:
    if raw is None:
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return value if isinstance(value, str | int | float | bool) else None


def _plain(raw: Any) -> Scalar:
    return raw if raw is None or isinstance(raw, str | int | float | bool) else str(raw)


class _Statement:
    """The per-run values the request needs (one row per filtered run, ``runs``), and
    the grouping statement over them."""

    def __init__(self, request: RunStatisticsRequest, where: ColumnElement[bool] | None) -> None:
        self.request = request
        self.columns: dict[str, ColumnElement[Any]] = {"run_id": _RUNS.c.id}
        self.joins_snapshot = False
        self.decoders = [self._group_column(i, g) for i, g in enumerate(request.groupings)]
        for index, metric in enumerate(request.metrics):
            self.columns[f"m{index}"] = self._metric_value(metric)
        source: Any = _RUNS
        if self.joins_snapshot:
            source = _RUNS.outerjoin(_SNAPSHOTS, _SNAPSHOTS.c.id == _RUNS.c.snapshot_id)
        runs = sa_select(*(c.label(n) for n, c in self.columns.items())).select_from(source)
        self.runs = (runs if where is None else runs.where(where)).subquery("runs")

    def _group_column(self, index: int, grouping: Grouping) -> Any:
        name = f"g{index}"
        if isinstance(grouping, TimeGrouping):
            self.columns[name] = _time_bucket(grouping.granularity)
        elif isinstance(grouping, MetadataGrouping):
            self.columns[name] = _metadata_value(grouping.metadata_key)
            return _decode_metadata
        elif grouping.type == "tag":
            return _plain  # joined in the grouping statement: a run has any number
        else:
            self.joins_snapshot |= grouping.type in ("source_snapshot", "stack")
            self.columns[name] = _SIMPLE[grouping.type]
        return _plain

    def _metric_value(self, metric: Metric) -> ColumnElement[Any]:
        if isinstance(metric, MetadataMetric):
            value = _metadata_value(metric.metadata_key)
            # NUMERIC, not a float: a JSON number of any size fits (1e400 would overflow).
            return case((value.op("~")(_JSON_NUMBER), cast(value, Numeric)))
        if metric.source == "duration":
            return extract("epoch", _RUNS.c.end_time - _RUNS.c.start_time)
        return func.coalesce(_step_value(metric.source), 0)

    def grouped(self) -> Select[Any]:
        runs, request = self.runs, self.request
        source: Any = runs
        groups: list[ColumnElement[Any]] = []
        time_index = None
        for index, grouping in enumerate(request.groupings):
            if isinstance(grouping, SimpleGrouping) and grouping.type == "tag":
                tags = (
                    sa_select(col(TagResource.resource_id).label("run_id"), col(Tag.name))
                    .join(Tag, col(Tag.id) == col(TagResource.tag_id))
                    .where(col(TagResource.resource_type) == TAG_RESOURCE)
                    .subquery("tags")
                )
                source = source.outerjoin(tags, tags.c.run_id == runs.c.run_id)
                groups.append(tags.c.name.label(f"g{index}"))
            else:
                groups.append(runs.c[f"g{index}"])
            if isinstance(grouping, TimeGrouping):
                time_index = index
        metrics = [
            _AGGREGATES[m.aggregation](runs.c[f"m{i}"]).label(f"m{i}")
            for i, m in enumerate(request.metrics)
        ]
        # A run is one row of ``runs``; only tags repeat it (counted once per group). A
        # distinct count sorts every row: 4.3 s for 900,000 runs, where count(*) takes 0.6.
        fanned_out = source is not runs
        count = (func.count(distinct(runs.c.run_id)) if fanned_out else func.count()).label(
            "run_count"
        )
        query = sa_select(*groups, *metrics, count).select_from(source)
        if groups:
            query = query.group_by(*groups)
        if time_index is not None:
            # Newest buckets first, so the limit keeps the latest; reversed on reading.
            order = [groups[time_index].desc()]
            order += [g.desc() for i, g in enumerate(groups) if i != time_index]
        else:
            order = [count.desc(), *(g.asc() for g in groups)]
        return query.order_by(*order).limit(request.max_groups + 1)

    def response(self, rows: Sequence[Any]) -> RunStatisticsResponse:
        request = self.request
        truncated = len(rows) > request.max_groups
        rows = rows[: request.max_groups]
        if any(isinstance(g, TimeGrouping) for g in request.groupings):
            rows = list(reversed(rows))
        groups = []
        for row in rows:
            keys = {
                g.name: decode(row[f"g{i}"])
                for i, (g, decode) in enumerate(zip(request.groupings, self.decoders, strict=True))
            }
            values = {
                m.name: None if row[f"m{i}"] is None else float(row[f"m{i}"])
                for i, m in enumerate(request.metrics)
            }
            groups.append(
                RunStatisticsGroup(group_keys=keys, metrics=values, run_count=row["run_count"])
            )
        return RunStatisticsResponse(groups=groups, truncated=truncated)


class RunStatisticsService(ScopedService[PipelineRun]):
    def __init__(self, session: AsyncSession) -> None:
        super().__init__(session, RunRepository(session))

    async def statistics(
        self, request: RunStatisticsRequest, listing: Listing
    ) -> RunStatisticsResponse:
        """The request's groups over the runs of the filter's project (the default one
        when it names none), of ``scope_user`` when given."""
        named = request.filter.get("project")
        if named is not None and not isinstance(named, str):
            loc = ["body", "filter", "project"]
            raise RequestValidationFailed.single(loc, "A project's name or id is a string.")
        project = await self.project(named)
        scope = [_RUNS.c.project_id == project.id]
        scope_user = request.filter.get("scope_user")
        if scope_user is not None:
            try:
                scope.append(_RUNS.c.user_id == uuid.UUID(str(scope_user)))
            except ValueError:
                loc = ["body", "filter", "scope_user"]
                raise RequestValidationFailed.single(loc, "Not a valid UUID.") from None
        statement = _Statement(request, where_clause(listing, scope))
        result = await core_execute(self.session, statement.grouped(), {})
        return statement.response([row._mapping for row in result.all()])
