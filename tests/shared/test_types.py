"""``WireDatetime``: held as naive UTC, sent as the reference's naive ISO-8601 UTC."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from pydantic import BaseModel, TypeAdapter
from sqlalchemy.engine import make_url

from shared.types import WIRE_DATETIME_SENT, WIRE_DATETIME_TAKEN, WireDatetime, WireTimestamp


class Stamped(BaseModel):
    at: WireDatetime


def test_aware_utc_serializes_as_naive_iso_with_microseconds():
    value = dt.datetime(2026, 11, 22, 10, 25, 49, 617843, tzinfo=dt.UTC)
    assert Stamped(at=value).model_dump_json() == '{"at":"2026-11-22T10:25:49.617843"}'


def test_naive_serializes_as_the_same_naive_iso():
    value = dt.datetime(2026, 11, 22, 10, 25, 49, 617843)
    assert Stamped(at=value).model_dump_json() == '{"at":"2026-11-22T10:25:49.617843"}'


def test_zero_microseconds_are_dropped():
    value = dt.datetime(2026, 11, 22, 10, 25, 49, tzinfo=dt.UTC)
    assert Stamped(at=value).model_dump_json() == '{"at":"2026-11-22T10:25:49"}'


def test_other_offsets_are_converted_to_utc():
    value = dt.datetime(2026, 11, 22, 12, 0, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    assert Stamped(at=value).model_dump_json() == '{"at":"2026-11-22T10:00:00"}'


@pytest.mark.parametrize("wire", ["2026-11-22T10:25:49.617843", "2026-11-22T10:25:49.617843Z"])
def test_parsed_values_are_held_as_naive_utc(wire):
    parsed = Stamped.model_validate_json(f'{{"at":"{wire}"}}').at
    assert parsed == dt.datetime(2026, 11, 22, 10, 25, 49, 617843)


def test_json_dump_in_python_mode_is_the_wire_string_too():
    value = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
    assert Stamped(at=value).model_dump(mode="json") == {"at": "2026-01-02T03:04:05"}


PLUS_TWO = dt.timezone(dt.timedelta(hours=2))


def test_json_schema_takes_a_date_time_and_sends_one_without_offset():
    adapter = TypeAdapter(WireDatetime)
    assert adapter.json_schema(mode="validation") == WIRE_DATETIME_TAKEN
    assert adapter.json_schema(mode="serialization") == WIRE_DATETIME_SENT
    pattern = re.compile(WIRE_DATETIME_SENT["pattern"])
    for value in (
        dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=PLUS_TWO),
        dt.datetime(2026, 1, 2, 3, 4, 5, 617843),
        dt.datetime(2026, 1, 2, 3, 4, 5, 500000),
    ):
        sent = Stamped(at=value).model_dump(mode="json")["at"]
        assert pattern.fullmatch(sent), sent
    assert not pattern.fullmatch("2026-01-02T03:04:05Z")


@pytest.mark.parametrize(
    ("stored", "read"),
    [
        (
            dt.datetime(2026, 11, 22, 12, 25, 49, 617843, tzinfo=PLUS_TWO),
            dt.datetime(2026, 11, 22, 10, 25, 49, 617843),
        ),
        (None, None),
    ],
)
def test_a_wire_timestamp_reads_as_naive_utc(stored, read):
    dialect = make_url("postgresql+asyncpg://").get_dialect()()
    assert WireTimestamp().process_result_value(stored, dialect) == read
