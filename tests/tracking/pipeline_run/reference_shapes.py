"""Shapes from ZenML 0.96.3's OpenAPI document (its ``components.schemas``, copied here
with titles and descriptions left out), to validate what the run page's calls answer."""

from __future__ import annotations

from typing import Any

import jsonschema_rs

DEFS: dict[str, Any] = {
    "PipelineRunDAG": {
        "properties": {
            "id": {"type": "string", "format": "uuid"},
            "status": {"$ref": "#/$defs/ExecutionStatus"},
            "nodes": {"items": {"$ref": "#/$defs/Node"}, "type": "array"},
            "edges": {"items": {"$ref": "#/$defs/Edge"}, "type": "array"},
        },
        "type": "object",
        "required": ["id", "status", "nodes", "edges"],
    },
    "ExecutionStatus": {
        "type": "string",
        "enum": [
            "initializing",
            "provisioning",
            "queued",
            "running",
            "failed",
            "completed",
            "cached",
            "skipped",
            "retrying",
            "retried",
            "cancelling",
            "cancelled",
            "paused",
            "resuming",
            "stopped",
            "stopping",
        ],
    },
    "Node": {
        "properties": {
            "node_id": {"type": "string"},
            "type": {"type": "string"},
            "id": {"anyOf": [{"type": "string", "format": "uuid"}, {"type": "null"}]},
            "name": {"type": "string"},
            "metadata": {"additionalProperties": True, "type": "object", "default": {}},
        },
        "type": "object",
        "required": ["node_id", "type", "name"],
    },
    "Edge": {
        "properties": {
            "source": {"type": "string"},
            "target": {"type": "string"},
            "metadata": {"additionalProperties": True, "type": "object", "default": {}},
        },
        "type": "object",
        "required": ["source", "target"],
    },
    "StepHeartbeatResponse": {
        "properties": {
            "id": {"type": "string", "format": "uuid"},
            "status": {"$ref": "#/$defs/ExecutionStatus"},
            "latest_heartbeat": {"type": "string", "format": "date-time"},
            "pipeline_run_status": {
                "anyOf": [{"$ref": "#/$defs/ExecutionStatus"}, {"type": "null"}]
            },
            "heartbeat_enabled": {"type": "boolean"},
        },
        "type": "object",
        "required": ["id", "status", "latest_heartbeat", "heartbeat_enabled"],
    },
    "ProjectStatistics": {
        "properties": {"pipelines": {"type": "integer"}, "runs": {"type": "integer"}},
        "type": "object",
        "required": ["pipelines", "runs"],
    },
    "LogEntry": {
        "properties": {
            "message": {"type": "string"},
            "name": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "level": {"anyOf": [{"$ref": "#/$defs/LoggingLevels"}, {"type": "null"}]},
            "timestamp": {"anyOf": [{"type": "string", "format": "date-time"}, {"type": "null"}]},
            "module": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "filename": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "lineno": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
            "chunk_index": {"type": "integer", "default": 0},
            "total_chunks": {"type": "integer", "default": 1},
            "id": {"type": "string", "format": "uuid"},
        },
        "type": "object",
        "required": ["message"],
    },
    "LoggingLevels": {"type": "integer", "enum": [0, 40, 30, 30, 20, 10, 50]},
}


def check_shape(name: str, value: Any) -> None:
    """Fail when ``value`` is not what the reference's schema ``name`` allows."""
    schema = {"$ref": f"#/$defs/{name}", "$defs": DEFS}
    jsonschema_rs.Draft202012Validator(schema, validate_formats=True).validate(value)
