"""agent-accounts service."""
