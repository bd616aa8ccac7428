"""webhooks service."""
