"""The gateway: nginx configuration rendered from ``deploy/stack.toml``."""
