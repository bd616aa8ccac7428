"""Identity's tables. Importing this package registers them on ``SQLModel.metadata``."""

from identity.models.api_key import APIKey
from identity.models.device import DeviceStatus, OAuthDevice
from identity.models.server_settings import ServerSettings
from identity.models.signing_key import SigningKey
from identity.models.user import User

__all__ = ["APIKey", "DeviceStatus", "OAuthDevice", "ServerSettings", "SigningKey", "User"]
