"""The reference's page envelope and page arithmetic."""

from __future__ import annotations

from typing import Generic, TypeVar

from pydantic import BaseModel, Field

from shared.errors import BadRequest

__all__ = ["Page"]

T = TypeVar("T")

MAX_PAGE_SIZE = 10000
DEFAULT_PAGE_SIZE = 20


class Page(BaseModel, Generic[T]):
    """``Page_X_``: the page asked for, its size, and the totals."""

    index: int = Field(gt=0)
    max_size: int = Field(gt=0)
    total_pages: int = Field(ge=0)
    total: int = Field(ge=0)
    items: list[T]


class PageParams(BaseModel):
    page: int = Field(default=1, ge=1)
    size: int = Field(default=DEFAULT_PAGE_SIZE, ge=1, le=MAX_PAGE_SIZE)


def total_pages(total: int, size: int) -> int:
    """Pages for ``total`` items; an empty result still has one (empty) page."""
    return max(1, -(-total // size))


def check_page(page: int, size: int, total: int) -> int:
    """The offset of ``page``, or the reference's 400 when it is past the last page."""
    pages = total_pages(total, size)
    if page > pages:
        raise BadRequest(
            f"Invalid page {page}. The requested page size is {size} and there are a total "
            f"of {total} items for this query. The maximum page value therefore is {pages}."
        )
    return (page - 1) * size
