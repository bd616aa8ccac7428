"""The ``run_metadata`` filter's documented form is what it takes."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared.listing import FilterError
from tracking.run_metadata.listing import METADATA_FILTER, metadata_condition


def admitted(value: str) -> bool:
    return bool(re.search(METADATA_FILTER.removesuffix("$") + r"\Z", value))


def read(value: str) -> None:
    """As the list reads it: a key, then a text filter."""
    metadata_condition(value)


@settings(max_examples=300, deadline=None)
@given(st.from_regex(METADATA_FILTER.removesuffix("$") + r"\Z"))
def test_what_the_pattern_admits_the_filter_takes(value: str) -> None:
    read(value)


@pytest.mark.parametrize(
    "value",
    [
        *("status:completed", "name:contains:test", "duration:gt:10", "k:oneof:[]", "k:"),
        # As the reference reads them: an empty key, keys named like operators.
        *(":value", "gt:x", "isnull:x", "in:x:1", "oneof:contains:a"),
    ],
)
def test_the_pattern_admits_the_documented_examples(value: str) -> None:
    assert admitted(value)
    read(value)


@pytest.mark.parametrize(
    "value", ["nokey", "duration:gt:ten", "k:isnull:x", "k:in:a,b", "gt:gt:x", ":oneof:a"]
)
def test_the_pattern_refuses_what_the_filter_refuses(value: str) -> None:
    assert not admitted(value)
    with pytest.raises(FilterError):
        read(value)
