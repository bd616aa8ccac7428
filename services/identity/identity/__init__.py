"""identity service."""
