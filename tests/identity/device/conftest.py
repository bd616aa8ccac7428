"""Device tests poll every second instead of every five."""

from tests.identity.device.support import identity_settings

__all__ = ["identity_settings"]
