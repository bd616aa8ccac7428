"""Secret request and response models in the reference's shapes."""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from typing import Any, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from shared.envelope import NamedEnvelope
from shared.users import NestedUser
from tracking.core.rendering import EnvelopeShape
from tracking.core.schemas import UserScopedBody

_REFERENCE = re.compile(r"\{\{\s*\S+?\.\S+\s*\}\}")


class SecretReference(NamedTuple):
    """``{{name.key}}``: a configuration value that stands for a secret's value."""

    name: str
    key: str


def secret_reference(value: Any) -> SecretReference | None:
    """The reference ``value`` is, by the reference's rule (the whole string, the name
    before the first dot, both parts stripped), or ``None``."""
    if not isinstance(value, str) or not _REFERENCE.fullmatch(value):
        return None
    name, key = value[2:-2].split(".", 1)
    return SecretReference(name.strip(), key.strip())


SecretValues = dict[str, str | None]
"""Keys to values; ``None`` is a key without its value (an update's "remove this key")."""


class SecretRequest(BaseModel):
    """``user`` is accepted and ignored: the owner is the caller."""

    model_config = ConfigDict(extra="ignore")

    user: uuid.UUID | None = None
    name: str = Field(max_length=255)
    private: bool = False
    values: SecretValues = Field(default_factory=dict)

    def secret_values(self) -> dict[str, str]:
        """The values to store: keys sent as null are dropped, as the reference does."""
        return {k: v for k, v in self.values.items() if v is not None}


class SecretUpdate(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: str | None = Field(default=None, max_length=255)
    private: bool | None = None
    values: SecretValues | None = None


class SecretUpdateQuery(BaseModel):
    """``patch_values``: merge the values sent into the stored ones (a null removes a key);
    otherwise (the default) the values sent replace the stored ones."""

    patch_values: bool | None = False


class SecretListQuery(BaseModel):
    """Accepted for the reference's clients and ignored: every list is scoped to what the
    caller may see (public secrets and the caller's private ones), as the reference's."""

    scope_user: uuid.UUID | None = Field(default=None, description="Ignored: the caller.")


class BackupQuery(BaseModel):
    ignore_errors: bool = True
    delete_secrets: bool = False


class RestoreQuery(BaseModel):
    ignore_errors: bool = False
    delete_secrets: bool = False


class SecretResponseBody(UserScopedBody):
    private: bool = False
    values: SecretValues = Field(default_factory=dict)


class SecretResponseMetadata(BaseModel):
    pass


class SecretResponseResources(BaseModel):
    model_config = ConfigDict(extra="allow")

    user: NestedUser | None = None


class SecretResponse(
    NamedEnvelope[SecretResponseBody, SecretResponseMetadata, SecretResponseResources]
):
    pass


SECRET = EnvelopeShape(SecretResponse)

NO_VALUES: Mapping[str, str | None] = {}


def secret_response(
    row: Any,
    hydrate: bool,
    user: NestedUser | None,
    values: Mapping[str, str | None] = NO_VALUES,
) -> dict[str, Any]:
    """One secret; ``values`` only where the reference answers them (a get, a create, an
    update), never in a list."""
    return SECRET(row, {"user": user}, hydrate=hydrate, body={"values": values})
