"""tracking service."""
