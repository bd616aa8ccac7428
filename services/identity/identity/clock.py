"""The service's notion of now: every service reads time through a :data:`Clock`, which
``create_app`` takes (tests pass one they move instead of sleeping)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

Clock = Callable[[], dt.datetime]
"""Now, as an aware UTC datetime (``shared.db.utcnow`` in production)."""
