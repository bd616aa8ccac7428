"""One delivery, one trace: the intake's span, its job in the worker and the worker's call
to tracking, across the queue and HTTP (in-memory spans, the real apps and queue)."""

from __future__ import annotations

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind

from tests.support.tracing import named, parent_id, span_id, trace_id
from tests.webhooks.event.support import executions, runs_of
from tests.webhooks.support import codehost_headers, push_body

TRACE = "0af7651916cd43dd8448eb211c80319c"
SENDER = "b7ad6b7169203331"


def child_of(span: ReadableSpan, parent: ReadableSpan) -> bool:
    return parent_id(span) == span_id(parent)


async def test_a_delivery_is_one_trace_from_intake_to_worker_to_tracking(
    client, auth, wired_to_tracking, drain, tracking, snapshot, spans
):
    hook, trigger = wired_to_tracking
    body = push_body("main")
    headers = codehost_headers(hook["secret"], body, delivery="d-traced")
    headers["traceparent"] = f"00-{TRACE}-{SENDER}-01"  # the sender's (or the gateway's)
    response = await client.post(
        f"/api/v1/webhooks/codehost/{hook['id']}/events", content=body, headers=headers
    )
    assert response.status_code == 202, response.text
    await drain()
    (execution,) = await executions(client, auth, trigger)
    (run,) = await runs_of(tracking, auth, snapshot)
    assert execution["run_id"] == run["id"]

    (intake,) = named(spans, "POST /api/v1/webhooks/{webhook_type}/{webhook_id}/events")
    assert intake.kind is SpanKind.SERVER
    assert parent_id(intake) == SENDER
    (job,) = named(spans, "process_event")
    assert job.kind is SpanKind.CONSUMER
    assert child_of(job, intake)
    # The job's calls: its service login at identity, then the run at tracking.
    calls = {
        str(span.attributes["url.full"]): span
        for span in named(spans, "POST")
        if child_of(span, job) and span.attributes is not None
    }
    assert set(calls) == {
        "http://identity/api/v1/login",
        f"http://tracking/api/v1/pipeline_snapshots/{snapshot['id']}/runs",
    }
    call = calls[f"http://tracking/api/v1/pipeline_snapshots/{snapshot['id']}/runs"]
    assert call.kind is SpanKind.CLIENT
    (runs,) = named(spans, "POST /api/v1/pipeline_snapshots/{snapshot_id}/runs")
    assert runs.kind is SpanKind.SERVER
    assert child_of(runs, call)
    assert runs.attributes is not None
    assert runs.attributes["http.response.status_code"] == 200
    assert {trace_id(span) for span in (intake, job, call, runs)} == {TRACE}
