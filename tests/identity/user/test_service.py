"""The last-admin rule: no change leaves the platform without an active admin, also when
two admins act on each other at once."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from identity.models import User
from identity.user.schemas import UserRequest, UserUpdate
from identity.user.service import LastAdmin, UserNotFound, UserService
from shared.db import session_scope
from tests.identity.conftest import ADMIN
from tests.support.asgi import LifespanApp

Change = Callable[[UserService, User, User], Awaitable[object]]

CHANGES: dict[str, Change] = {
    "deactivated": lambda users, user, actor: users.deactivate(user),
    "deactivated by an update": lambda users, user, actor: users.update(
        user, UserUpdate(active=False), by_admin=True, actor=str(actor.id)
    ),
    "demoted": lambda users, user, actor: users.update(
        user, UserUpdate(is_admin=False), by_admin=True, actor=str(actor.id)
    ),
    "deleted": lambda users, user, actor: users.delete(user, actor=str(actor.id)),
}


@contextlib.asynccontextmanager
async def users_of(app: LifespanApp) -> AsyncIterator[UserService]:
    """A transaction of its own, committed at the end of the block."""
    async with session_scope(app.state["sessionmaker"]) as session:
        yield UserService(session, app.state["revocations"])


async def add_admin(app: LifespanApp, name: str) -> None:
    request = UserRequest(name=name, is_admin=True, active=True, password=f"{name} password 1")
    async with users_of(app) as users:
        await users.create(request)


async def active_admins(app: LifespanApp) -> int:
    async with users_of(app) as users:
        return await users.repository.count_admins()


@pytest.mark.parametrize("change", list(CHANGES))
async def test_the_last_active_admin_cannot_be_taken_away(
    identity_app: LifespanApp, change: str
) -> None:
    await add_admin(identity_app, "bob")
    async with users_of(identity_app) as users:
        await users.deactivate(await users.get("bob"))  # an inactive admin does not count

    with pytest.raises(LastAdmin) as refused:
        async with users_of(identity_app) as users:
            await CHANGES[change](users, await users.get(ADMIN), await users.get("bob"))

    assert refused.value.status_code == 403
    assert refused.value.detail() == [
        "IllegalOperationError",
        "There has to be at least one active admin account at all times: "
        f"'{ADMIN}' is the only one, so it cannot be {change.split()[0]}.",
    ]
    assert await active_admins(identity_app) == 1


@pytest.mark.parametrize("change", list(CHANGES))
async def test_another_active_admin_may_be_taken_away(
    identity_app: LifespanApp, change: str
) -> None:
    await add_admin(identity_app, "bob")

    async with users_of(identity_app) as users:
        await CHANGES[change](users, await users.get("bob"), await users.get(ADMIN))

    assert await active_admins(identity_app) == 1


@pytest.mark.parametrize("change", list(CHANGES))
async def test_two_admins_taking_each_other_away_at_once_leave_one(
    identity_app: LifespanApp, change: str
) -> None:
    await add_admin(identity_app, "bob")
    first_done = asyncio.Event()
    release_first = asyncio.Event()

    async def first() -> None:
        """The default admin takes bob away and keeps its transaction open a while."""
        async with users_of(identity_app) as users:
            await CHANGES[change](users, await users.get("bob"), await users.get(ADMIN))
            first_done.set()
            await release_first.wait()

    async def second() -> None:
        """Bob, who read itself as an active admin, takes the default admin away."""
        async with users_of(identity_app) as users:
            await CHANGES[change](users, await users.get(ADMIN), await users.get("bob"))

    first_task = asyncio.create_task(first())
    await first_done.wait()
    second_task = asyncio.create_task(second())
    # The second waits for the first's transaction (a row lock)...
    done, _ = await asyncio.wait({second_task}, timeout=0.5)
    assert not done
    release_first.set()
    await first_task
    # ...and then sees that the default admin is the last one (or that bob, deleted, is gone).
    with pytest.raises((LastAdmin, UserNotFound)):
        await second_task
    assert await active_admins(identity_app) == 1
