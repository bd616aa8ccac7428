"""Schemathesis's JUnit report read as failures (operation, check, status, what the
answer said), and the failures :mod:`tests.e2e.conformance.accepted` accepts."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ElementTree
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tests.e2e.conformance.accepted import ACCEPTED, ACCEPTED_ANSWERS, OPEN

# The check behind each failure code of schemathesis's report (`st explain <code>`).
CHECK_OF_CODE = {
    "ST101": "not_a_server_error",
    "ST102": "not_a_server_error",
    "ST104": "response_schema_conformance",
    "ST108": "response_schema_conformance",
    "ST109": "response_schema_conformance",
    "ST110": "response_schema_conformance",
    "ST111": "response_schema_conformance",
    "ST201": "negative_data_rejection",
    "ST202": "positive_data_acceptance",
    "ST204": "unsupported_method",
    "ST205": "allow_header_conformance",
}


@dataclass(frozen=True)
class Failure:
    """One failed check of one generated case, as the report says it: the response's
    status and what it said (or what the check says of it)."""

    operation: str
    check: str
    status: str
    said: str

    def line(self) -> str:
        return f"{self.operation}  {self.check}  [{self.status}] {self.said}"


def accepted(document: str, failure: Failure) -> bool:
    key = (failure.operation, failure.check)
    if key in ACCEPTED[document] or key in OPEN[document]:
        return True
    return any(
        (name, check, status) == (document, failure.check, failure.status) and words in failure.said
        for name, check, status, words in ACCEPTED_ANSWERS
    )


_CASE = re.compile(r"\n?\d+\. Test Case ID: \w+\n")
_STATUS = re.compile(r"\n\[(\d+)\] [^\n]*\n\n\s+`?([^\n]*)")
_CODE = re.compile(r"^- (ST\d+)[^\n]*\n\n\s+([^\n]*)", re.MULTILINE)
_SCHEMA_AT = re.compile(r"Schema at ([^\n]*?):?\n")
_COMPONENT = re.compile(r"Invalid component: ([^\n]*)")
# The checks whose message is the same for every case: the response's body says more.
_BODY_SAYS = frozenset({"not_a_server_error", "positive_data_acceptance", "error"})


def failures(report: Path) -> list[Failure]:
    """Every failure of a JUnit report: one a check and generated case, and one for each
    error schemathesis met (a failed request, a document it could not read)."""
    found: list[Failure] = []
    # The report is the one this run's schemathesis wrote, not outside input.
    for case in ElementTree.parse(report).iter("testcase"):  # noqa: S314
        operation = case.get("name") or "?"
        for failure in case.findall("failure"):
            for text in _CASE.split(failure.text or "")[1:]:
                status = _STATUS.search(text)
                code, body = ("-", "") if status is None else status.group(1, 2)
                for number, message in dict(_CODE.findall(text)).items():
                    check = CHECK_OF_CODE.get(number) or str(number)
                    said = _said(check, message, text, body.strip("`"))
                    found.append(Failure(operation, check, code, said[:240]))
        for error in case.findall("error"):
            head = " ".join((error.text or error.get("message") or "").split())[:240]
            found.append(Failure(operation, "error", "-", head))
    return found


def _said(check: str, message: str, text: str, body: str) -> str:
    """What a failure's line says: the head of the body where the check's message is
    always the same; what was invalid for an accepted request; else the message."""
    if check in _BODY_SAYS:
        return body
    if check == "negative_data_rejection":
        component = _COMPONENT.search(text)
        return f"{component.group(1) if component else message}: {body}"
    schema = _SCHEMA_AT.search(text) if check == "response_schema_conformance" else None
    return message + (f" (at {schema.group(1)})" if schema else "")


def grouped(found: Sequence[Failure]) -> str:
    """``found`` as lines grouped by check, the count of each first."""
    checks = sorted({f.check for f in found})
    lines = []
    for check in checks:
        these = sorted({f.line() for f in found if f.check == check})
        lines.append(f"{check}: {len(these)}")
        lines += [f"  {line}" for line in these]
    return "\n".join(lines)
