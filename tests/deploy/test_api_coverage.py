"""docs/api-coverage.md: every operation of ZenML 0.96.3's OpenAPI document, served or
not and why, built from the reference document, the gateway's routes and the services'
route tables (deploy/coverage.py), so it cannot go stale."""

from __future__ import annotations

from typing import Any

from starlette.responses import Response
from starlette.routing import Route

from deploy.config import parse_stack
from deploy.coverage import (
    PAGE,
    REFERENCE,
    build,
    measure,
    platform_routes,
    reference_operations,
)

Ops = list[tuple[str, str]]


async def _endpoint(_request: Any) -> Response:
    return Response()


def stack() -> Any:
    return parse_stack(
        {
            "gateway": {},
            "valkey": {"port": 6399},
            "postgres": {"port": 5499},
            "entrypoint": [
                {
                    "name": "platform",
                    "title": "p",
                    "port": 8080,
                    "unimplemented": ["/api/v1/models"],
                },
            ],
            "service": [
                {
                    "name": "things",
                    "module": "things",
                    "kind": "web",
                    "port": 8101,
                    "entrypoint": "platform",
                    "routes": ["/api/v1/things"],
                    "issuer": True,
                },
            ],
        }
    )


ROUTES = {"things": [Route("/api/v1/things/{thing_id}", _endpoint, methods=["GET"])]}
OPERATIONS: Ops = [
    ("GET", "/api/v1/things/{thing_id}"),
    ("PUT", "/api/v1/things/{thing_id}"),
    ("GET", "/api/v1/things/{thing_id}/parts"),
    ("GET", "/api/v1/models"),
    ("GET", "/api/v1/gone"),
]


def test_the_page_is_what_the_reference_and_the_code_make_it():
    page, problems = build()
    assert problems == []
    assert PAGE.read_text(encoding="utf-8") == page, "run: python -m deploy.coverage"


def test_the_page_names_every_operation_of_the_reference_once():
    operations = reference_operations(REFERENCE)
    rows = [line for line in PAGE.read_text(encoding="utf-8").splitlines() if line[:2] == "| "]
    listed = [tuple(cell.strip(" `") for cell in row.split("|")[1:3]) for row in rows[1:]]
    assert listed == operations
    assert len(operations) == 267


def test_an_operation_is_served_only_by_a_route_taking_its_method():
    reasons = {"/api/v1/things": "things are read only", "/api/v1/models": "no models",
               "/api/v1/gone": "gone"}  # fmt: skip
    coverage = measure(stack(), OPERATIONS, reasons, ROUTES)
    assert coverage.served == {("GET", "/api/v1/things/{thing_id}"): "things"}
    assert coverage.unserved == {
        ("PUT", "/api/v1/things/{thing_id}"): "(things 405): things are read only",
        ("GET", "/api/v1/things/{thing_id}/parts"): "(things 404): things are read only",
        ("GET", "/api/v1/models"): "(gateway 501): no models",
        ("GET", "/api/v1/gone"): "(gateway 404): gone",
    }
    assert coverage.unexplained == []
    assert coverage.stale_reasons == []


def test_the_longest_reason_wins_and_a_method_narrows_it():
    reasons = {"/api/v1": "everything", "PUT /api/v1/things": "no writes",
               "/api/v1/things/{thing_id}/parts": "no parts"}  # fmt: skip
    coverage = measure(stack(), OPERATIONS, reasons, ROUTES)
    assert coverage.unserved[("PUT", "/api/v1/things/{thing_id}")].endswith(": no writes")
    assert coverage.unserved[("GET", "/api/v1/things/{thing_id}/parts")].endswith(": no parts")
    assert coverage.unserved[("GET", "/api/v1/models")].endswith(": everything")


def test_an_operation_without_reason_and_a_reason_without_operation_are_problems():
    reasons = {"/api/v1/models": "no models", "/api/v1/things/{thing_id}": "not all"}
    coverage = measure(stack(), OPERATIONS, reasons, ROUTES)
    assert coverage.unexplained == [("GET", "/api/v1/gone")]
    assert coverage.stale_reasons == []
    # Once the operations it names are served, a reason is stale.
    reasons = {"GET /api/v1/things": "no parts"}
    coverage = measure(stack(), OPERATIONS[:3:2], reasons, ROUTES)
    assert (coverage.unexplained, coverage.stale_reasons) == ([], [])
    coverage = measure(stack(), OPERATIONS[:1], reasons, ROUTES)
    assert coverage.stale_reasons == ["GET /api/v1/things"]


def test_a_service_without_an_app_serves_nothing():
    routes = platform_routes(stack())  # "things" is no importable module
    assert routes == {"things": ()}
