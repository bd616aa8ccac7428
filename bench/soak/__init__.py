"""The soak (security.md §5 at full size, by hand, never in CI): signed webhook deliveries
through the real stack while its parts are killed, then a report of what became of them.

    make soak                                            # 10,000 deliveries, 100 kills, 5 min
    uv run python -m bench.soak --deliveries 300 --kills 5 --outage 10s     # a quick run

Starts the stack as processes, each on its own so that any of them can be killed: its
own Valkey (append-only, ``everysec``, ``noeviction``, restartable on its files),
identity, tracking and the webhooks service (a new PostgreSQL database each, dropped after,
on the server ``--database-url``, ``TEST_DATABASE_URL`` or ``DATABASE_URL`` names, else on
an embedded server started for the soak as the tests start theirs), ``--workers`` webhook
workers and the nginx gateway, configured as the launcher configures them
(``deploy/local``). It creates a ``custom`` webhook and a trigger that runs a pipeline
snapshot in tracking for every event, then sends
``--deliveries`` signed deliveries to the gateway at a steady rate over ``--duration``
(each its own delivery id and body) while this schedule runs:

- ``--kills`` SIGKILLs of a worker picked at random, spread over the sending, each
  restarted ``--restart-after`` later;
- Valkey SIGKILLed early on and restarted on its files ``--valkey-down`` later;
- tracking SIGKILLed, away for ``--outage``, restarted; then identity the same (``--away``
  picks which goes first).

Senders act as a real sender does: a 503 (the intake's answer while its queue is
unreachable), another 5xx or a failed connection is retried with the same delivery id
after ``Retry-After`` (or a growing pause), until ``--give-up``. Once the last delivery
is answered and the last outage is over, the soak waits for the queue to drain (no job
queued or deferred, none in progress), then counts the runs tracking holds for the
snapshot, by the delivery id each records, and prints the report: answers by status,
deliveries accepted, processed exactly once, lost (accepted, no run), duplicated (more
than one run), the time to drain after the last outage ended. Exit status 1 when
anything was lost or duplicated, a delivery was never accepted, a 5xx came other than
a 503 while Valkey was down (and up to ``VALKEY_GRACE`` after), or a trigger execution
was left pending by a drained queue (its job dropped).

Only loopback is used. Logs stay in the data dir (``--keep`` keeps it; it is printed).
"""
