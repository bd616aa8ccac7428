"""Rendering tracking's answers: the response envelope of named resources built straight
from rows (:class:`EnvelopeShape`, see :mod:`shared.shapes`), and one item, a page or a
batch rendered with its creators looked up in identity in one call."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar, get_args

from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import Response

from shared.listing import Listing, page_of
from shared.responses import render
from shared.shapes import Builders, Shape, compile_builder
from shared.users import NestedUser, users_by_id


def _part(response: type[BaseModel], name: str) -> type[BaseModel]:
    """The model of one envelope part (``body`` …) of a parametrized response."""
    annotation = response.model_fields[name].annotation
    for candidate in get_args(annotation) or (annotation,):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    raise TypeError(f"{response.__name__}.{name} is not a model")


_NOTHING: dict[str, Any] = {}


class EnvelopeShape:
    """A response envelope's wire dict (a :class:`~shared.envelope.Envelope`
    subclass, or any model with ``body``, ``metadata`` and ``resources`` parts), built
    from a row (see :mod:`shared.shapes`): the body and, hydrated, the metadata from the
    row's columns of the same names; the resources from what the caller gathered. The
    whole envelope is built by one function, compiled per kind of row and set of given
    values."""

    def __init__(self, response: type[BaseModel]) -> None:
        self.envelope = Shape(response)
        self.body = Shape(_part(response, "body"))
        self.metadata = Shape(_part(response, "metadata"))
        self.resources = Shape(_part(response, "resources"))
        self._builders = Builders(self._compile)

    def __call__(
        self,
        row: Any,
        resources: dict[str, Any],
        *,
        hydrate: bool,
        body: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """``body`` and ``metadata`` give values the row lacks (or holds in another form)."""
        body = body or _NOTHING
        metadata = metadata or _NOTHING
        given = (tuple(body), tuple(metadata), tuple(resources), hydrate)
        builder = self._builders.for_row(row, given)
        return builder(row, body, metadata, resources)  # type: ignore[no-any-return]

    def _compile(
        self,
        columns: tuple[str, ...] | None,
        given: tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], bool],
    ) -> Any:
        body, metadata, resources, hydrate = given
        env: dict[str, Any] = {}
        parts = {
            "body": self.body.display(columns, frozenset(body), env, "body", "b"),
            "metadata": (
                self.metadata.display(columns, frozenset(metadata), env, "metadata", "m")
                if hydrate
                else "None"
            ),
            "resources": self.resources.display(
                None, frozenset(resources), env, "resources", "r", row="None"
            ),
        }
        envelope = self.envelope.display(columns, frozenset(), env, "_", "e", inline=parts)
        return compile_builder("row, body, metadata, resources", envelope, env)


class HasCreator(Protocol):
    @property
    def user_id(self) -> uuid.UUID | None: ...


Creator = TypeVar("Creator", bound=HasCreator)
Respond = Callable[[Creator, bool, NestedUser | None], BaseModel | dict[str, Any]]
"""Renders one item: (item, hydrate, its creator), as a model or a shape's dict."""


def _creator(users: dict[uuid.UUID, NestedUser], item: HasCreator) -> NestedUser | None:
    return users.get(item.user_id) if item.user_id is not None else None


async def render_one(
    request: Request, item: Creator, respond: Respond[Creator], *, hydrate: bool
) -> Response:
    users = await users_by_id(request, [item.user_id])
    return render(respond(item, hydrate, _creator(users, item)))


async def render_page(
    request: Request,
    listing: Listing,
    total: int,
    items: Sequence[Creator],
    respond: Respond[Creator],
) -> Response:
    """One page, every creator looked up in one batch."""
    users = await users_by_id(request, [item.user_id for item in items])
    rendered = [respond(item, listing.hydrate, _creator(users, item)) for item in items]
    return render(page_of(listing, total, rendered))


async def render_many(
    request: Request, items: Sequence[Creator], respond: Respond[Creator]
) -> Response:
    """A JSON list of hydrated items (batch creates), creators looked up in one batch."""
    users = await users_by_id(request, [item.user_id for item in items])
    return render([respond(item, True, _creator(users, item)) for item in items])
