"""``codehost`` (GitHub and senders speaking its protocol)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import BaseModel

from webhooks.intake.providers.base import (
    Delivery,
    PayloadError,
    RequestHeaders,
    SemanticEvent,
    check_prefixed,
    decode_payload,
    header,
    nested,
    text,
)
from webhooks.intake.providers.targets import target_model

EVENT_HEADERS = ("x-codehost-event", "x-github-event")
DELIVERY_HEADERS = ("x-codehost-delivery", "x-github-delivery")
SIGNATURE_HEADERS = ("x-codehost-signature-256", "x-hub-signature-256")
# The event families triggers can act on; any other is answered 202 before lookup.
SUPPORTED_EVENTS = frozenset({"pull_request", "workflow_run", "push", "release", "issues"})
BRANCH_PREFIX = "refs/heads/"


def _login(payload: Mapping[str, Any], *path: str) -> str | None:
    return text(nested(payload, *path, "login"))


def _names(items: Any, key: str) -> list[str]:
    if not isinstance(items, list):
        return []
    return [name for item in items if isinstance(item, dict) and (name := text(item.get(key)))]


class Codehost:
    name: ClassVar[str] = "codehost"
    min_targets: ClassVar[int] = 1
    targets: ClassVar[Mapping[str, type[BaseModel]]] = {
        "merged_pull_request": target_model(
            "merged_pull_request", ("repo", "target_branch", "source_branch", "author")
        ),
        "workflow_run_completed": target_model(
            "workflow_run_completed", ("workflow", "conclusion", "actor")
        ),
        "push": target_model("push", ("repo", "branch", "actor")),
        "release_published": target_model(
            "release_published", ("repo", "tag", "target_branch", "actor")
        ),
        "issue_opened": target_model(
            "issue_opened",
            ("repo", "author", "author_association", "labels", "assignees", "milestone"),
        ),
    }

    def pre_validate(self, headers: RequestHeaders) -> bool:
        event = header(headers, EVENT_HEADERS)
        if not event:
            raise PayloadError("Missing required X-Codehost-Event header.")
        return event in SUPPORTED_EVENTS

    def authenticate(
        self, body: bytes, headers: RequestHeaders, secret: str, now: float
    ) -> str | None:
        return check_prefixed(body, headers, secret, SIGNATURE_HEADERS)

    def parse(self, body: bytes, headers: RequestHeaders) -> tuple[Delivery, dict[str, Any] | None]:
        # GitHub may send form content (the JSON in a `payload` field); the signature was
        # checked on the raw bytes already.
        payload = decode_payload(body, headers.get("content-type"))
        event_type = header(headers, EVENT_HEADERS) or ""
        # The signature covers the body alone: the delivery header is a label, and the
        # body names the event (a GitHub redelivery sends the same body and header).
        delivery_id = header(headers, DELIVERY_HEADERS) or None
        return Delivery(event_type, None, delivery_id=delivery_id), payload

    def semantic_events(self, event_type: str, payload: Mapping[str, Any]) -> list[SemanticEvent]:
        action = payload.get("action")
        repo = text(nested(payload, "repository", "full_name"))
        if event_type == "pull_request" and action == "closed":
            pr = payload.get("pull_request")
            if isinstance(pr, dict) and pr.get("merged") is True:
                fields = {
                    "repo": repo,
                    "target_branch": text(nested(pr, "base", "ref")),
                    "source_branch": text(nested(pr, "head", "ref")),
                    "author": _login(pr, "user"),
                }
                commit = {"name": fields["source_branch"], "sha": text(pr.get("merge_commit_sha"))}
                return [SemanticEvent("merged_pull_request", fields, {"commit": commit})]
        if event_type == "workflow_run" and action == "completed":
            fields = {
                "workflow": text(nested(payload, "workflow_run", "name")),
                "conclusion": text(nested(payload, "workflow_run", "conclusion")),
                "actor": _login(payload, "workflow_run", "actor"),
            }
            return [SemanticEvent("workflow_run_completed", fields)]
        if event_type == "push":
            ref = text(payload.get("ref")) or ""
            if ref.startswith(BRANCH_PREFIX):
                branch = ref.removeprefix(BRANCH_PREFIX)
                fields = {"repo": repo, "branch": branch, "actor": _login(payload, "sender")}
                commit = {"name": branch, "sha": text(payload.get("after"))}
                return [SemanticEvent("push", fields, {"commit": commit})]
        if event_type == "release" and action == "published":
            fields = {
                "repo": repo,
                "tag": text(nested(payload, "release", "tag_name")),
                "target_branch": text(nested(payload, "release", "target_commitish")),
                "actor": _login(payload, "sender"),
            }
            return [SemanticEvent("release_published", fields)]
        if event_type == "issues" and action == "opened":
            issue = payload.get("issue") if isinstance(payload.get("issue"), dict) else {}
            assert isinstance(issue, dict)
            issue_fields: dict[str, str | list[str] | None] = {
                "repo": repo,
                "author": _login(issue, "user"),
                "author_association": text(issue.get("author_association")),
                "labels": _names(issue.get("labels"), "name"),
                "assignees": _names(issue.get("assignees"), "login"),
                "milestone": text(nested(issue, "milestone", "title")),
            }
            data = {"number": issue.get("number"), "title": text(issue.get("title"))}
            return [SemanticEvent("issue_opened", issue_fields, data)]
        return []
