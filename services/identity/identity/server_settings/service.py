"""The server's settings (one row), who may change them, the onboarding steps completed so
far and when a user was last seen.

Onboarding steps are recorded once and kept, as the reference keeps them: identity records
``device_verified`` itself when a user approves a device. The other steps follow from
tracking's data (a project, a stack with a remote orchestrator or artifact store, a
finished run, a deployment). Identity asks tracking for them when the onboarding state is
read (:class:`TrackingOnboarding`), instead of tracking telling identity as they happen:
tracking's data is the truth, so an answer is always right (nothing is lost while identity
is away, no event to deliver and retry); a read that finds every step recorded asks nothing.
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import Protocol

import httpx
from pydantic import TypeAdapter, ValidationError
from sqlalchemy.exc import SQLAlchemyError
from sqlmodel.ext.asyncio.session import AsyncSession

from identity.core.auth import acting_user
from identity.models import ServerSettings
from identity.server_settings.repository import ServerSettingsRepository
from identity.server_settings.schemas import (
    TRACKING_STEPS,
    ServerActivationRequest,
    ServerSettingsUpdate,
)
from identity.settings import Settings
from shared.auth import Principal
from shared.db import Clock, SessionMaker, session_scope
from shared.errors import Forbidden
from shared.onboarding import ONBOARDING_PATH, OnboardingStep

logger = logging.getLogger(__name__)

ACTIVITY_PRECISION = dt.timedelta(seconds=30)
"""``last_user_activity`` is written at most this often (the reference's interval)."""

_STEPS = TypeAdapter(list[str])


class NotAdmin(Forbidden):
    def __init__(self) -> None:
        super().__init__("Only admins can update server settings.")


class AlreadyActive(Forbidden):
    def __init__(self) -> None:
        super().__init__("The server is already active.")


def initial_settings(settings: Settings, now: dt.datetime) -> ServerSettings:
    """The row a new server starts with: analytics off; announcements and update notices
    as the operator chose (off unless turned on)."""
    return ServerSettings(
        server_name=settings.server_name,
        enable_analytics=False,
        display_announcements=settings.display_announcements,
        display_updates=settings.display_updates,
        last_user_activity=now,
        updated=now,
    )


class ServerSettingsService:
    def __init__(self, session: AsyncSession, clock: Clock) -> None:
        self.repository = ServerSettingsRepository(session)
        self.clock = clock

    async def get(self) -> ServerSettings:
        return await self.repository.get()

    async def get_for(self, caller: Principal) -> ServerSettings:
        """Any active user reads the settings."""
        await self.check_reader(caller)
        return await self.get()

    async def check_reader(self, caller: Principal) -> None:
        """Any active user reads the settings and the onboarding state (401 otherwise)."""
        await acting_user(self.repository.session, caller)

    async def update_for(self, caller: Principal, update: ServerSettingsUpdate) -> ServerSettings:
        """An admin changes the settings; anyone else may send an update that changes
        nothing (as the reference), and gets 403 for any field it sets."""
        user = await acting_user(self.repository.session, caller)
        changes = update.changes()
        if changes and not user.is_admin:
            raise NotAdmin()
        row = await self.repository.get(for_update=True)
        if changes:
            for name, value in changes.items():
                setattr(row, name, value)
            row.updated = self.clock()
            self.repository.add(row)
            await self.repository.session.flush()
        return row

    async def activate(self, _request: ServerActivationRequest) -> None:
        """The reference activates a server once; this one is active from its first start
        (it creates its default admin then), so every activation is refused as the
        reference refuses a second one."""
        raise AlreadyActive()

    async def complete_steps(self, steps: set[OnboardingStep]) -> None:
        await self.repository.complete_steps(steps, self.clock())


class OnboardingSource(Protocol):
    async def completed(self) -> set[OnboardingStep] | None:
        """The steps done, or None when they cannot be told right now."""
        ...


class TrackingOnboarding:
    """Asks tracking which of :data:`TRACKING_STEPS` its data shows, as identity's service."""

    def __init__(self, http: httpx.AsyncClient, tracking_url: str, auth: httpx.Auth) -> None:
        self._http = http
        self._url = tracking_url.rstrip("/") + ONBOARDING_PATH
        self._auth = auth

    async def completed(self) -> set[OnboardingStep] | None:
        try:
            response = await self._http.get(self._url, auth=self._auth)
        except httpx.HTTPError as exc:
            logger.warning("tracking did not answer the onboarding state: %s", type(exc).__name__)
            return None
        if response.status_code != 200:
            logger.warning(
                "tracking refused the onboarding state", extra={"status": response.status_code}
            )
            return None
        try:
            names = _STEPS.validate_json(response.content)
        except ValidationError:
            logger.warning("tracking's onboarding state is not a list of step names")
            return None
        # A step this identity does not know (a newer tracking) has no place in its answer.
        return {OnboardingStep(n) for n in names if n in TRACKING_STEPS}


async def onboarding_state(
    sessionmaker: SessionMaker, source: OnboardingSource, clock: Clock
) -> list[str]:
    """The completed steps, in the checklist's order. Steps tracking shows for the first
    time are recorded; while tracking cannot answer, the recorded ones are the answer (the
    dashboard's checklist then lags, it does not fail)."""
    async with session_scope(sessionmaker) as session:
        recorded = set((await ServerSettingsRepository(session).get()).onboarding_state)
    if not recorded.issuperset(TRACKING_STEPS):
        found = await source.completed() or set()
        if not found <= recorded:
            async with session_scope(sessionmaker) as session:
                await ServerSettingsRepository(session).complete_steps(found, clock())
            recorded |= found
    return [step.value for step in OnboardingStep if step in recorded]


class UserActivity:
    """Moves ``last_user_activity`` to the time a user is seen, at most every
    :data:`ACTIVITY_PRECISION`: a replica that wrote it less than that ago does not ask the
    database again (as the reference's server process), and the write itself is
    conditional, so replicas seeing users at the same time write it about once.

    Best effort, in its own short transaction, like a device's last use: a busy database
    must not fail the request the user made."""

    def __init__(self, sessionmaker: SessionMaker) -> None:
        self._sessionmaker = sessionmaker
        self._written: dt.datetime | None = None

    async def seen(self, now: dt.datetime) -> None:
        if self._written is not None and now - self._written < ACTIVITY_PRECISION:
            return
        self._written = now
        try:
            async with session_scope(self._sessionmaker) as session:
                await ServerSettingsRepository(session).record_activity(now, ACTIVITY_PRECISION)
        except SQLAlchemyError:
            logger.warning("could not record the last user activity")
