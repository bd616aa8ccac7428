"""The reference's page envelope and page arithmetic."""

from __future__ import annotations

from typing import Generic, TypeVar

from pydantic import BaseModel, Field

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


def page_offset(page: int, size: int, total: int) -> int | None:
    """The offset of ``page``'s first item, or ``None`` past the last page: that page is
    empty (200 with no items, not the reference's 400 "Invalid page": its own document
    allows any page from 1), and is answered without a query, since its offset may not
    even fit in PostgreSQL's bigint."""
    if page > total_pages(total, size):
        return None
    return (page - 1) * size
