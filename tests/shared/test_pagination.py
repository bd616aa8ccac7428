"""Page arithmetic and the page envelope, as the reference computes them."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ValidationError

from shared.pagination import MAX_PAGE_SIZE, Page, PageParams, page_offset, total_pages


@pytest.mark.parametrize(
    ("total", "size", "pages"),
    [(0, 20, 1), (1, 20, 1), (20, 20, 1), (21, 20, 2), (40, 20, 2), (10001, 10000, 2)],
)
def test_total_pages_rounds_up_and_is_at_least_one(total, size, pages):
    assert total_pages(total, size) == pages


@pytest.mark.parametrize(("page", "total"), [(3, 21), (2, 0), (10**22, 5)])
def test_page_offset_past_the_last_page_is_none(page, total):
    assert page_offset(page, 20, total) is None


@pytest.mark.parametrize(("page", "offset"), [(1, 0), (2, 20)])
def test_page_offset_of_a_page_in_range(page, offset):
    assert page_offset(page, 20, 21) == offset


def test_page_offset_of_the_single_empty_page_is_zero():
    assert page_offset(1, 20, 0) == 0


def test_page_params_default_to_the_first_page_of_twenty():
    assert PageParams() == PageParams(page=1, size=20)


@pytest.mark.parametrize("values", [{"page": 0}, {"size": 0}, {"size": MAX_PAGE_SIZE + 1}])
def test_page_params_out_of_range_are_rejected(values):
    with pytest.raises(ValidationError):
        PageParams.model_validate(values)


class Item(BaseModel):
    name: str


def test_page_envelope_serializes_keys_in_the_reference_order():
    page = Page[Item](index=1, max_size=20, total_pages=1, total=1, items=[Item(name="a")])
    assert page.model_dump_json() == (
        '{"index":1,"max_size":20,"total_pages":1,"total":1,"items":[{"name":"a"}]}'
    )
