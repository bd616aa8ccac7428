from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class LoginForm(BaseModel):
    model_config = ConfigDict(extra="ignore")

    grant_type: str | None = Field(default=None, max_length=128)
    username: str | None = Field(default=None, max_length=255)
    password: str | None = Field(default=None, max_length=4096)
    device_id: str | None = Field(default=None, max_length=64)
    device_code: str | None = Field(default=None, max_length=256)


class TokenResponse(BaseModel):
    access_token: str
    token_type: str = "bearer"
    expires_in: int
    csrf_token: str | None = None
