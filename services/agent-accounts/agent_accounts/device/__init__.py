"""The device flow: device authorization, verification and the authorized devices."""
