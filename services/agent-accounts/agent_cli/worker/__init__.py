"""``agent-run worker``: the worker runtime and its commands."""
