"""The trigger filter language: validation of configurations and matching of events."""

from __future__ import annotations

from typing import Any

import pytest

from shared.errors import RequestValidationFailed
from webhooks.core.filters import matches, parse_path, resolve
from webhooks.intake.providers import providers
from webhooks.trigger.configuration import match, normalize

PROVIDERS = providers(300)
CODEHOST, CHAT, TASKS, CUSTOM = (PROVIDERS[k] for k in ("codehost", "chat", "tasks", "custom"))


def push(branch: str = "main", actor: str = "alice") -> dict[str, Any]:
    return {
        "ref": f"refs/heads/{branch}",
        "repository": {"full_name": "acme/app"},
        "sender": {"login": actor},
    }


def targets(*items: dict[str, Any]) -> dict[str, Any]:
    return {"target_events": list(items)}


@pytest.mark.parametrize(
    ("condition", "value", "expected"),
    [
        ("main", "main", True),
        ("main", "mainline", False),
        ("startswith:release/", "release/1.2", True),
        ("endswith:-rc", "1.0-rc", True),
        ("contains:fix", "hotfix-1", True),
        ("notcontains:wip", "wip-branch", False),
        ("notequals:main", "dev", True),
        ('oneof:["a","b"]', "b", True),
        ('notoneof:["a","b"]', "b", False),
        (["main", "dev"], "dev", True),
        ("weird:prefix", "weird:prefix", True),  # an unknown operator is a literal
        (None, None, True),
        ("main", None, False),
    ],
)
def test_a_filter_matches_a_single_value(condition, value, expected):
    assert matches(condition, value) is expected


@pytest.mark.parametrize(
    ("condition", "values", "expected"),
    [
        ("bug", ["bug", "ui"], True),
        ("notequals:bug", ["bug", "ui"], False),
        ("notequals:bug", ["ui", "docs"], True),
        ("bug", [], False),
        ("notequals:bug", [], False),
    ],
)
def test_a_filter_on_a_collection_needs_any_or_all(condition, values, expected):
    assert matches(condition, values) is expected


def test_codehost_push_matches_its_branch_filter():
    config = normalize(CODEHOST, targets({"type": "push", "branch": "startswith:release/"}))
    assert match(CODEHOST, config, "push", push("release/2")) is not None
    assert match(CODEHOST, config, "push", push("main")) is None


def test_a_trigger_matches_when_any_target_does():
    config = normalize(
        CODEHOST, targets({"type": "push", "branch": "main"}, {"type": "push", "actor": "bob"})
    )
    assert match(CODEHOST, config, "push", push("dev", "bob")) is not None
    assert match(CODEHOST, config, "push", push("dev", "eve")) is None


def test_tags_give_no_push_event():
    config = normalize(CODEHOST, targets({"type": "push"}))
    assert match(CODEHOST, config, "push", {**push(), "ref": "refs/tags/v1"}) is None


def test_only_a_merged_pull_request_matches_merged_pull_request():
    config = normalize(CODEHOST, targets({"type": "merged_pull_request", "target_branch": "main"}))
    pr: dict[str, Any] = {
        "action": "closed",
        "repository": {"full_name": "acme/app"},
        "pull_request": {"merged": True, "base": {"ref": "main"}, "head": {"ref": "feature"}},
    }
    matched = match(CODEHOST, config, "pull_request", pr)
    assert matched is not None
    assert matched["source_branch"] == "feature"
    pr["pull_request"]["merged"] = False
    assert match(CODEHOST, config, "pull_request", pr) is None


def test_issue_labels_filter_as_a_collection():
    config = normalize(CODEHOST, targets({"type": "issue_opened", "labels": "bug"}))
    issue: dict[str, Any] = {
        "action": "opened",
        "issue": {"labels": [{"name": "ui"}, {"name": "bug"}]},
    }
    assert match(CODEHOST, config, "issues", issue) is not None
    issue["issue"]["labels"] = []
    assert match(CODEHOST, config, "issues", issue) is None


def slack_message(**event: Any) -> dict[str, Any]:
    return {
        "event_id": "Ev1",
        "team_id": "T1",
        "event_time": 1,
        "event": {"type": "message", "event_ts": "1.0", "ts": "1.0", "channel": "C1", **event},
    }


def test_chat_message_targets_take_plain_messages_unless_asked_for_subtypes():
    plain = normalize(CHAT, targets({"type": "message", "channel_id": "C1"}))
    every = normalize(CHAT, targets({"type": "message", "include_subtypes": True}))
    assert match(CHAT, plain, "message", slack_message(text="hi")) is not None
    assert match(CHAT, plain, "message", slack_message(subtype="bot_message")) is None
    assert match(CHAT, every, "message", slack_message(subtype="bot_message")) is not None


def test_chat_mentions_by_bots_are_ignored():
    config = normalize(CHAT, targets({"type": "app_mention"}))
    mention = slack_message(type="app_mention", text="hi")
    assert match(CHAT, config, "app_mention", mention) is not None
    mention["event"]["bot_id"] = "B1"
    assert match(CHAT, config, "app_mention", mention) is None


def test_tasks_status_comes_from_the_last_history_item():
    config = normalize(TASKS, targets({"type": "taskStatusUpdated", "status": "done"}))
    body = {"task_id": 7, "history_items": [{"after": "open"}, {"after": {"status": "done"}}]}
    matched = match(TASKS, config, "taskStatusUpdated", body)
    assert matched is not None
    assert matched["task_id"] == "7"


def test_dynamic_targets_filter_on_payload_paths():
    config = normalize(
        CUSTOM,
        targets(
            {
                "type": "dynamic",
                "event_type": "startswith:build.",
                "filters": {"result.ok": "true", "jobs[*].name": "deploy"},
            }
        ),
    )
    payload = {"result": {"ok": True}, "jobs": [{"name": "test"}, {"name": "deploy"}]}
    assert match(CUSTOM, config, "build.done", payload) is not None
    assert match(CUSTOM, config, "lint.done", payload) is None
    assert match(CUSTOM, config, "build.done", {**payload, "result": {"ok": False}}) is None


def test_custom_triggers_without_targets_take_every_event():
    assert match(CUSTOM, normalize(CUSTOM, {}), "anything", {}) is not None


def test_omitted_fields_are_stored_as_null():
    config = normalize(CODEHOST, targets({"type": "push", "branch": "main"}))
    assert config == {
        "target_events": [{"type": "push", "repo": None, "branch": "main", "actor": None}]
    }


@pytest.mark.parametrize(
    "config",
    [
        targets({"type": "push", "brnch": "main"}),  # misspelled field
        targets({"type": "pushed"}),  # unknown event
        targets(),  # codehost needs at least one target
        targets(*[{"type": "push"}] * 11),  # at most ten
        targets({"type": "push", "branch": ["x"] * 11}),  # at most ten expressions
        targets({"type": "push", "branch": "x" * 513}),  # at most 512 characters
        targets({"type": "push", "branch": "oneof:not-json"}),
        targets({"type": "dynamic", "filters": {"a..b": "x"}}),  # malformed path
        {"target_events": [], "other": 1},
    ],
)
def test_malformed_configurations_are_refused(config):
    with pytest.raises(RequestValidationFailed):
        normalize(CODEHOST, config)


def test_paths_resolve_scalars_as_json_text():
    payload: dict[str, Any] = {"a": {"n": 1.5, "t": True, "z": None, "o": {}}}
    assert [resolve(payload, parse_path(f"a.{k}")) for k in "ntzo"] == ["1.5", "true", "null", None]
    assert resolve({"x": [1, 2]}, parse_path("x[1]")) == "2"
    assert resolve({"odd key": "v"}, parse_path('["odd key"]')) == "v"


def test_a_refused_target_field_is_located_under_its_target_and_type():
    with pytest.raises(RequestValidationFailed) as info:
        normalize(CODEHOST, targets({"type": "push"}, {"type": "push", "brnch": "main"}))
    assert [(e["loc"], e["type"]) for e in info.value.errors] == [
        (["body", "configuration", "target_events", 1, "push", "brnch"], "extra_forbidden")
    ]
