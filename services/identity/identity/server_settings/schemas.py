"""Server settings and onboarding steps in the reference's shapes (``ServerSettings*``)."""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from identity.models import ServerSettings
from shared.envelope import EnvelopeParts
from shared.onboarding import OnboardingStep
from shared.types import WireDatetime

IDENTITY_STEPS = frozenset({OnboardingStep.DEVICE_VERIFIED})
"""The steps identity sees happen itself (a user approving a device)."""
TRACKING_STEPS = frozenset(OnboardingStep) - IDENTITY_STEPS
"""The steps that follow from tracking's data (projects, stacks, runs, deployments)."""


# The dashboard puts the logo in an <img src>: a web address (http or https, in any case),
# nothing a browser would run; empty removes the logo.
LOGO_URL_PATTERN = r"^$|^[Hh][Tt][Tt][Pp][Ss]?://"


class ServerSettingsUpdate(BaseModel):
    """What an admin may change. A field left out, or null, is left as it is, except
    ``logo_url``: null or an empty string removes the logo."""

    model_config = ConfigDict(extra="ignore")

    # Any text, as the reference stores it (it runs no name rule on the server's name).
    server_name: str | None = Field(default=None, max_length=255)
    logo_url: str | None = Field(default=None, max_length=2048, pattern=LOGO_URL_PATTERN)
    enable_analytics: bool | None = None
    display_announcements: bool | None = None
    display_updates: bool | None = None

    def changes(self) -> dict[str, Any]:
        """The fields this update sets (the reference's test of who may send it)."""
        values = self.model_dump(exclude_unset=True)
        changes = {name: value for name, value in values.items() if value is not None}
        if "logo_url" in values:
            changes["logo_url"] = values["logo_url"] or None
        return changes


class ServerActivationRequest(ServerSettingsUpdate):
    """``PUT /activate``: the settings a server starts with and, optionally, its first admin."""

    admin_username: str | None = None
    admin_password: str | None = None


class ServerSettingsResponseBody(BaseModel):
    server_id: uuid.UUID
    server_name: str
    logo_url: str | None = None
    active: bool
    enable_analytics: bool
    display_announcements: bool | None
    display_updates: bool | None
    last_user_activity: WireDatetime
    updated: WireDatetime


class ServerSettingsResponseMetadata(BaseModel):
    pass


class ServerSettingsResponseResources(BaseModel):
    pass


class ServerSettingsResponse(
    EnvelopeParts[
        ServerSettingsResponseBody, ServerSettingsResponseMetadata, ServerSettingsResponseResources
    ]
):
    pass


class ServerSettingsQuery(BaseModel):
    hydrate: bool = True


def settings_response(
    row: ServerSettings, server_id: uuid.UUID, *, hydrate: bool
) -> ServerSettingsResponse:
    """As the reference renders them: resources always, metadata when hydrated."""
    return ServerSettingsResponse(
        body=ServerSettingsResponseBody(
            server_id=server_id,
            server_name=row.server_name,
            logo_url=row.logo_url,
            active=True,
            enable_analytics=row.enable_analytics,
            display_announcements=row.display_announcements,
            display_updates=row.display_updates,
            last_user_activity=row.last_user_activity,
            updated=row.updated,
        ),
        metadata=ServerSettingsResponseMetadata() if hydrate else None,
        resources=ServerSettingsResponseResources(),
    )
