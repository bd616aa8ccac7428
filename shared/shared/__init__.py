"""The platform's shared library.

Only what every service needs lives here: settings base, errors and their wire shapes,
JWT verification, the DB session and migrations, middleware, health, OpenAPI generation,
the HTTP client factory and the Redis connection. ``shared`` imports no service.
"""

__all__: list[str] = []  # the package exports its modules, no names of its own
