"""The reference's document and our agent document, the reference's identity share last
(:mod:`tests.e2e.conformance` says what and how); and every share of every document
checked by one of the modules."""

import re
from pathlib import Path

# The other module deals its shares on import.
from tests.e2e import conformance, test_conformance_platform  # noqa: F401
from tests.e2e.conformance import conformance_module, every_share
from tests.e2e.conformance.report import Failure, failures

shares = every_share("reference")
stack, plans, test_conforms = conformance_module(
    ("reference", shares[:-1]), ("agent", every_share("agent")), ("reference", shares[-1:])
)


def test_every_share_of_every_document_is_checked_by_one_module() -> None:
    every = [(name, n) for name in conformance.DOCUMENTS for n in every_share(name)]
    assert sorted(conformance.DEALT) == sorted(every)


def test_the_reference_copy_has_the_wire_timestamps_in_responses_and_no_health() -> None:
    copy = conformance.corrected_reference()
    schemas = copy["components"]["schemas"]
    created = schemas["ProjectResponseBody"]["properties"]["created"]
    assert created["pattern"] == conformance.NAIVE_TIMESTAMP
    assert "format" not in created
    assert re.fullmatch(conformance.NAIVE_TIMESTAMP, "2026-11-22T10:25:49.617843")
    assert re.fullmatch(conformance.NAIVE_TIMESTAMP, "2026-11-22T10:25:49")
    assert not re.fullmatch(conformance.NAIVE_TIMESTAMP, "2026-11-22T10:25:49+00:00")
    assert "/health" not in copy["paths"]
    assert "/ready" not in copy["paths"]
    assert "/api/v1/projects" in copy["paths"]


def test_failures_are_read_from_the_junit_report(tmp_path: Path) -> None:
    report = tmp_path / "junit.xml"
    report.write_text(JUNIT, encoding="utf-8")
    assert failures(report) == [
        Failure(
            "GET /api/v1/tags/{tag_id}",
            "response_schema_conformance",
            "200",
            "'teal' is not one of ['red'] (at /components/schemas/Tag/properties/color)",
        ),
        Failure("POST /api/v1/tags", "positive_data_acceptance", "422", '{"detail": "no"}'),
        Failure("POST /api/v1/tags", "unsupported_method", "405", "TRACE returned 405 without"),
    ]


JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="schemathesis">
<testcase name="GET /api/v1/tags/{tag_id}">
<failure type="failure" message="ST108">1. Test Case ID: a1

- ST108 Response violates schema

    'teal' is not one of ['red']

    Schema at /components/schemas/Tag/properties/color:

        {}

[200] OK:

    `{"color": "teal"}`
</failure></testcase>
<testcase name="POST /api/v1/tags"><failure type="failure" message="ST202">1. Test Case ID: b2

- ST202 Schema-valid request rejected

    Valid data should have been accepted

[422] Unprocessable Content:

    `{"detail": "no"}`

2. Test Case ID: c3

- ST204 Wrong response to undeclared method

    TRACE returned 405 without

[405] Method Not Allowed:

    `{}`
</failure></testcase>
<testcase name="GET /api/v1/info"/>
</testsuite></testsuites>
"""
