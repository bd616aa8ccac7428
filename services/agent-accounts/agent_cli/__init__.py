"""``agent-run``, the agent-run server's command line (logins, status, the worker runtime),
and ``agent-run-read``, a read-only client of the stored login. Both speak to the server
over HTTP only; nothing here imports the server's package."""

__version__ = "0.1.0"
