"""The list engine every list endpoint uses: filter expressions, sorting, pagination."""

from shared.listing.engine import (
    Listing,
    ListParams,
    LogicalOperator,
    fetch_page,
    listing_of,
    page_of,
    parse_conditions,
    parse_list,
    read_list,
    resolve_lookups,
    resolve_sort,
    where_clause,
)
from shared.listing.expressions import Condition, FilterError, Kind, Op, parse
from shared.listing.spec import (
    Field,
    ListSpec,
    Lookup,
    SortKey,
    base_fields,
    column_field,
    name_or_id,
)

__all__ = [
    "Condition",
    "Field",
    "FilterError",
    "Kind",
    "ListParams",
    "ListSpec",
    "Listing",
    "LogicalOperator",
    "Lookup",
    "Op",
    "SortKey",
    "base_fields",
    "column_field",
    "fetch_page",
    "listing_of",
    "name_or_id",
    "page_of",
    "parse",
    "parse_conditions",
    "parse_list",
    "read_list",
    "resolve_lookups",
    "resolve_sort",
    "where_clause",
]
