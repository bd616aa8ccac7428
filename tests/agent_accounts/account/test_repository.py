from __future__ import annotations

import httpx
import pytest

from agent_accounts.account.repository import AccountAlreadyExists, AccountRepository
from agent_accounts.models import Account
from agent_accounts.settings import Settings
from shared.db import create_engine, create_sessionmaker, session_scope


async def test_a_name_taken_between_check_and_insert_is_409_not_a_500(
    client: httpx.AsyncClient, agent_settings: Settings
):
    """The race the name check cannot see: the insert meets the unique constraint and
    becomes the 409 error (``client`` has migrated the database)."""
    engine = create_engine(agent_settings.database_url)
    try:
        sessionmaker = create_sessionmaker(engine)
        async with session_scope(sessionmaker) as session:
            await AccountRepository(session).add(Account(name="raced"))
        with pytest.raises(AccountAlreadyExists) as raised:
            async with session_scope(sessionmaker) as session:
                await AccountRepository(session).add(Account(name="raced"))
    finally:
        await engine.dispose()

    assert raised.value.status_code == 409
