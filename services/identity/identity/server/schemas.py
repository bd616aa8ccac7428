from __future__ import annotations

import uuid
from enum import StrEnum

from pydantic import BaseModel, Field

from shared.types import WireDatetime


class AuthScheme(StrEnum):
    NO_AUTH = "NO_AUTH"
    HTTP_BASIC = "HTTP_BASIC"
    OAUTH2_PASSWORD_BEARER = "OAUTH2_PASSWORD_BEARER"
    EXTERNAL = "EXTERNAL"


class ServerModel(BaseModel):
    id: uuid.UUID
    name: str | None = None
    version: str
    active: bool = True
    debug: bool = False
    deployment_type: str = "other"
    database_type: str = "other"
    secrets_store_type: str = "sql"
    auth_scheme: AuthScheme
    server_url: str = ""
    dashboard_url: str = ""
    analytics_enabled: bool = False
    metadata: dict[str, str] = Field(default_factory=dict)
    last_user_activity: WireDatetime | None = None
    pro_dashboard_url: str | None = None
    pro_api_url: str | None = None
    pro_organization_id: uuid.UUID | None = None
    pro_organization_name: str | None = None
    pro_workspace_id: uuid.UUID | None = None
    pro_workspace_name: str | None = None


class ServerLoadInfo(BaseModel):
    threads: int
    db_connections_total: int
    db_connections_active: int
    db_connections_overflow: int
