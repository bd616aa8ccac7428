"""Page arithmetic and the page envelope, as the reference computes them."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ValidationError

from shared.errors import BadRequest
from shared.pagination import MAX_PAGE_SIZE, Page, PageParams, check_page, total_pages


@pytest.mark.parametrize(
    ("total", "size", "pages"),
    [(0, 20, 1), (1, 20, 1), (20, 20, 1), (21, 20, 2), (40, 20, 2), (10001, 10000, 2)],
)
def test_total_pages_rounds_up_and_is_at_least_one(total, size, pages):
    assert total_pages(total, size) == pages


def test_check_page_past_the_end_raises_the_reference_message():
    with pytest.raises(BadRequest) as info:
        check_page(3, 20, 21)
    assert info.value.body() == {
        "detail": [
            "ValueError",
            "Invalid page 3. The requested page size is 20 and there are a total of 21 items "
            "for this query. The maximum page value therefore is 2.",
        ]
    }
    assert info.value.status_code == 400


@pytest.mark.parametrize(("page", "offset"), [(1, 0), (2, 20)])
def test_check_page_returns_the_offset_of_a_page_in_range(page, offset):
    assert check_page(page, 20, 21) == offset


def test_check_page_allows_the_single_empty_page():
    assert check_page(1, 20, 0) == 0


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
