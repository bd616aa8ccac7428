from __future__ import annotations

import datetime as dt

from sqlalchemy import JSON, CheckConstraint, Column
from sqlmodel import Field, SQLModel

from shared.db import utcnow


class ServerSettings(SQLModel, table=True):
    """The server's settings, one row (``id`` 1): what an admin changes at run time (the
    name, the logo, analytics and the dashboard's announcements and update notices), the
    onboarding steps completed so far, and when a user was last seen.

    Created at the first start from the service's settings; the service's settings do not
    change it afterwards (as the reference's ``ZENML_SERVER_*`` initial values)."""

    __tablename__ = "server_settings"
    __table_args__ = (CheckConstraint("id = 1", name="server_settings_one_row"),)

    id: int = Field(default=1, primary_key=True)
    server_name: str = Field(max_length=255)
    logo_url: str | None = Field(default=None, max_length=2048)
    enable_analytics: bool = False
    display_announcements: bool = False
    display_updates: bool = False
    # The completed onboarding steps (OnboardingStep values), in no particular order.
    onboarding_state: list[str] = Field(
        default_factory=list, sa_column=Column(JSON, nullable=False)
    )
    last_user_activity: dt.datetime = Field(default_factory=utcnow)
    updated: dt.datetime = Field(default_factory=utcnow)
