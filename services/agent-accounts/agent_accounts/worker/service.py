"""Workers: registered by an account (usually with an API key), then acting with a worker
token scoped to that one worker, renewed with the account's credential."""

from __future__ import annotations

import datetime as dt
import re
import uuid

from sqlmodel.ext.asyncio.session import AsyncSession

from agent_accounts.core.auth import AccountCaller, WorkerCaller
from agent_accounts.core.listing import ListQuery
from agent_accounts.core.schemas import aware_utc
from agent_accounts.core.tokens import SignedToken, TokenIssuer
from agent_accounts.models import Worker
from agent_accounts.worker.repository import WorkerRepository
from agent_accounts.worker.schemas import WorkerCreateRequest
from shared.db import Clock
from shared.errors import Forbidden, HTTPDetailError, NotFound

# Workers that have not been seen for this long are not live.
LIVENESS = dt.timedelta(seconds=60)
# Clients up to this version speak an older worker protocol.
OLDEST_REFUSED = (0, 22, 2)
_CLIENT = re.compile(r"^kitaru-python/(\d+)\.(\d+)\.(\d+)")


class WorkerNotFound(NotFound):
    def __init__(self, worker_id: object) -> None:
        super().__init__(f"Worker {worker_id} was not found")


def check_client(header: str | None) -> None:
    """426 for a ``kitaru-python`` client too old for this worker protocol."""
    match = _CLIENT.match(header or "")
    if match and tuple(int(p) for p in match.groups()) <= OLDEST_REFUSED:
        raise HTTPDetailError(426, "This client is too old for this server; upgrade kitaru.")


class WorkerService:
    def __init__(self, session: AsyncSession, clock: Clock) -> None:
        self.repository = WorkerRepository(session)
        self.clock = clock

    def live(self, worker: Worker) -> bool:
        return self.clock() - aware_utc(worker.last_seen_at) < LIVENESS

    async def register(
        self, request: WorkerCreateRequest, caller: AccountCaller, issuer: TokenIssuer
    ) -> tuple[Worker, SignedToken]:
        now = self.clock()
        worker = Worker(
            owner_id=caller.account_id,
            name=request.name,
            scope=request.scope.model_dump(mode="json", exclude_none=True),
            runtime=request.runtime.model_dump(mode="json", exclude_none=True),
            worker_metadata=request.metadata,
            last_seen_at=now,
            created=now,
            updated=now,
        )
        worker = await self.repository.add(worker)
        return worker, issuer.worker(worker.id, caller.account_id, caller.api_key_id)

    async def get(self, worker_id: uuid.UUID) -> Worker:
        worker = await self.repository.get(worker_id)
        if worker is None:
            raise WorkerNotFound(worker_id)
        return worker

    async def _owned(self, worker_id: uuid.UUID, caller: AccountCaller) -> Worker:
        worker = await self.get(worker_id)
        if worker.owner_id != caller.account_id:
            raise Forbidden("Only the account that registered this worker may do this.")
        return worker

    async def renew(
        self, worker_id: uuid.UUID, caller: AccountCaller, issuer: TokenIssuer
    ) -> SignedToken:
        worker = await self._owned(worker_id, caller)
        worker.last_seen_at = self.clock()
        await self.repository.add(worker)
        return issuer.worker(worker.id, caller.account_id, caller.api_key_id)

    async def heartbeat(self, worker_id: uuid.UUID, caller: WorkerCaller) -> None:
        if worker_id != caller.worker_id:
            raise Forbidden("A worker token acts only for its own worker.")
        worker = await self.get(worker_id)
        worker.last_seen_at = self.clock()
        await self.repository.add(worker)

    async def list(
        self, query: ListQuery, *, include_stale: bool
    ) -> tuple[list[Worker], str | None]:
        seen_after = None if include_stale else self.clock() - LIVENESS
        return await self.repository.list(query, seen_after=seen_after)

    async def delete(self, worker_id: uuid.UUID, caller: AccountCaller) -> None:
        await self.repository.delete(await self._owned(worker_id, caller))
