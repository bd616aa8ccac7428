"""The failures of :mod:`tests.e2e.conformance` that are the documented behaviour: rules a
JSON Schema cannot state (one of two fields required, a name that must not be empty...),
each with its reason. Any failure not accepted here fails the test."""

from __future__ import annotations

ACCEPTED: dict[str, dict[tuple[str, str], str]] = {
    # The reference's own server refuses the same (its models' validators and its store),
    # or ours does for a reason its document cannot express.
    "reference": {
        (
            "POST /api/v1/artifacts",
            "positive_data_acceptance",
        ): "an empty name: the reference's store runs validate_name on create",
        (
            "POST /api/v1/models",
            "positive_data_acceptance",
        ): "an empty name: validate_name, as the reference's create_model",
        (
            "POST /api/v1/workspaces/{project_name_or_id}/models",
            "positive_data_acceptance",
        ): "an empty name: validate_name, as the reference's create_model",
        (
            "POST /api/v1/components",
            "positive_data_acceptance",
        ): "an empty name: validate_name, as the reference's create_stack_component",
        (
            "POST /api/v1/workspaces/{project_name_or_id}/components",
            "positive_data_acceptance",
        ): "an empty name: validate_name, as the reference's create_stack_component",
        (
            "PUT /api/v1/components/{component_id}",
            "positive_data_acceptance",
        ): "an empty name: one the reference refuses at creation is not made by renaming",
        (
            "POST /api/v1/tags",
            "positive_data_acceptance",
        ): "an empty name: validate_name, as the reference's create_tag",
        (
            "PUT /api/v1/tags/{tag_id}",
            "positive_data_acceptance",
        ): "an empty name: one the reference refuses at creation is not made by renaming",
        (
            "POST /api/v1/stacks",
            "positive_data_acceptance",
        ): "an empty name (validate_name) or no orchestrator and artifact store (StackRequest)",
        (
            "POST /api/v1/workspaces/{project_name_or_id}/stacks",
            "positive_data_acceptance",
        ): "an empty name (validate_name) or no orchestrator and artifact store",
        (
            "PUT /api/v1/stacks/{stack_id}",
            "positive_data_acceptance",
        ): "an empty name (validate_name) or no orchestrator and artifact store (StackUpdate)",
        (
            "PUT /api/v1/pipeline_snapshots/{snapshot_id}",
            "positive_data_acceptance",
        ): "an empty snapshot name: the reference's PipelineSnapshotUpdate validator",
        (
            "PUT /api/v1/model_versions/{model_version_id}",
            "positive_data_acceptance",
        ): "a stage not among the model stages: the reference's ModelVersionUpdate validator",
        (
            "POST /api/v1/logs",
            "positive_data_acceptance",
        ): "two different IDs set at once: the reference's LogsRequest",
        (
            "PUT /api/v1/logs/{logs_id}",
            "positive_data_acceptance",
        ): "two different IDs set at once: the reference's LogsUpdate",
        (
            "PUT /api/v1/runs/{run_id}",
            "positive_data_acceptance",
        ): "add_logs with two different IDs set at once: the reference's LogsRequest",
        (
            "PUT /api/v1/steps/{step_id}",
            "positive_data_acceptance",
        ): "add_logs with two different IDs set at once: the reference's LogsRequest",
        (
            "GET /api/v1/api_token",
            "positive_data_acceptance",
        ): (
            "a workload token scoped to none or several of schedule, run, deployment,"
            " or a generic one scoped to one: the reference refuses them so"
        ),
        (
            "POST /api/v1/artifact_versions",
            "positive_data_acceptance",
        ): "both artifact_name and artifact_id: the reference's ArtifactVersionRequest validator",
        (
            "POST /api/v1/users",
            "positive_data_acceptance",
        ): "an empty name or one with tabs or line breaks: a user logs in and is addressed by name",
        (
            "PUT /api/v1/users/{user_name_or_id}",
            "positive_data_acceptance",
        ): "an empty name or one with tabs or line breaks: a user is addressed by name",
        (
            "PUT /api/v1/current-user",
            "positive_data_acceptance",
        ): "an empty name or one with tabs or line breaks: a user is addressed by name",
        (
            "PUT /api/v1/users/{user_name_or_id}/activate",
            "positive_data_acceptance",
        ): "an empty name or one with tabs or line breaks: a user is addressed by name",
        (
            "PUT /api/v1/users/{user_name_or_id}/email-opt-in",
            "positive_data_acceptance",
        ): "an empty name or one with tabs or line breaks: a user is addressed by name",
        (
            "POST /api/v1/service_accounts",
            "positive_data_acceptance",
        ): "an empty name or one with tabs or line breaks: addressed by name",
        (
            "PUT /api/v1/service_accounts/{service_account_name_or_id}",
            "positive_data_acceptance",
        ): "an empty name or one with tabs or line breaks: addressed by name",
        (
            "POST /api/v1/service_accounts/{service_account_id}/api_keys",
            "positive_data_acceptance",
        ): "an empty name or one with tabs or line breaks: an API key is addressed by name",
        (
            "PUT /api/v1/service_accounts/{service_account_id}/api_keys/{api_key_name_or_id}",
            "positive_data_acceptance",
        ): "an empty name or one with tabs or line breaks: an API key is addressed by name",
    },
    "platform": {
        (
            "POST /api/v1/artifact_versions",
            "positive_data_acceptance",
        ): "exactly one of artifact_name and artifact_id (the reference's ArtifactVersionRequest)",
        (
            "POST /api/v1/artifact_versions/batch",
            "positive_data_acceptance",
        ): "exactly one of artifact_name and artifact_id, in each item",
        (
            "POST /api/v1/artifacts",
            "positive_data_acceptance",
        ): "a null name: typed optional as the reference's, refused by its store's validate_name",
        (
            "POST /api/v1/models",
            "positive_data_acceptance",
        ): "no name, or one with forbidden characters (the reference's validate_name)",
        (
            "POST /api/v1/run-metadata",
            "positive_data_acceptance",
        ): "every key of values needs its type in types (cross-field)",
        (
            "POST /api/v1/workspaces/{project_name_or_id}/run-metadata",
            "positive_data_acceptance",
        ): "every key of values needs its type in types (cross-field)",
        (
            "POST /api/v1/logs",
            "positive_data_acceptance",
        ): "exactly one of artifact_store_id and log_store_id (the reference's LogsRequest)",
        (
            "PUT /api/v1/logs/{logs_id}",
            "positive_data_acceptance",
        ): "two different IDs at once (the reference's LogsUpdate)",
        (
            "GET /api/v1/api_token",
            "positive_data_acceptance",
        ): "a generic token cannot name a schedule, run or deployment (cross-field)",
        (
            "PUT /api/v1/model_versions/{model_version_id}",
            "positive_data_acceptance",
        ): "a stage string that is no model stage (typed str or stage, as the reference's)",
    },
    "agent": {
        (
            "POST /api/v1/tasks",
            "positive_data_acceptance",
        ): "run.command is required for agent tasks and refused for the others (depends on kind)",
        (
            "POST /api/v1/workers",
            "positive_data_acceptance",
        ): "repeated selector keys, or claims equal but for a left-out vs null agent_version_id",
    },
}
"""Each document's ``("METHOD /path", check) -> why``: the refusals (and acceptances) of
one operation that are its documented behaviour, for rules a JSON Schema cannot state;
any other failure fails the test."""

ACCEPTED_ANSWERS: dict[tuple[str, str, str, str], str] = {
    ("reference", "positive_data_acceptance", "422", "is not a datetime in the format"): (
        "every list's datetime filters take the one format the reference's take"
        " (its document says date-time; the reference refuses the same)"
    ),
}
"""A rule many operations share: ``(document, check, status, words of the answer) ->
why``, accepting a failure of any operation whose answer has that status and says
those words."""
