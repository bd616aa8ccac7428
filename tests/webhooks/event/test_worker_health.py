"""Each worker process reports its health under a key of its own.

Async so that arq's worker adopts the running loop: made outside one, it makes a loop of
its own that nothing closes (a ResourceWarning whenever the collector frees it later, failing
whichever test runs then)."""

from __future__ import annotations

import os

from webhooks.settings import Settings
from webhooks.worker import create_worker


async def test_worker_replicas_do_not_share_the_health_check_key(webhooks_settings: Settings):
    worker = create_worker(webhooks_settings, burst=True)
    queue = webhooks_settings.queue_name
    # arq's default, one key per queue, would be overwritten by every replica in turn.
    assert worker.health_check_key != f"{queue}:health-check"
    assert worker.health_check_key.startswith(f"{queue}:health-check:")
    assert worker.health_check_key.endswith(f":{os.getpid()}")
