# mypy: ignore-errors
# Runs inside the kitaru 0.27.2 environment (see test_kitaru_client.py); `emit` comes
# from the snippet prelude. Every step's result is reported for the test to check.
import asyncio
import os
import secrets

from kitaru.api_models.v1.account import (
    ServiceAccountCreateRequest,
    UserActivateRequest,
    UserCreateRequest,
)
from kitaru.api_models.v1.api_key import (
    ApiKeyCreateRequest,
    ApiKeyRotateRequest,
    ApiKeyUpdateRequest,
)
from kitaru.api_models.v1.filter import AndFilter, FilterCondition, FilterOp
from kitaru.api_models.v1.session import SessionListParams
from kitaru.api_models.v1.task import TaskListParams
from kitaru.api_models.v1.worker import WorkerCreateRequest
from kitaru.client.api_client import KitaruAPIClient
from kitaru.client.exceptions import APIError

URL = os.environ["AGENT_URL"]
SUFFIX = secrets.token_hex(4)


async def status_of(coro):
    try:
        await coro
    except APIError as error:
        return error.status_code
    return 200


async def walk(client, path, params):
    """Every page of a list, following cursors as the SDK's iterate_pages does, with the
    query the SDK's list methods send; the ids on each page."""
    pages = []
    while True:
        query = params.model_dump(mode="json", exclude_unset=True)
        page = (await client.request("GET", path, params=query)).json()
        pages.append([item["id"] for item in page["items"]])
        if page["next_cursor"] is None:
            return pages
        params = params.model_copy(update={"cursor": page["next_cursor"]})


async def lists(admin):
    """Tasks and sessions listed with kitaru's own list params: filter trees, sizes and
    cursors."""
    steps = {}
    task_ids = []
    for _ in range(3):
        created = await admin.request(
            "POST", "/api/v1/tasks", json={"kind": "importer", "timeout_seconds": 60}
        )
        task_ids.append(created.json()["id"])
    steps["created tasks"] = task_ids
    ours = FilterCondition(field="id", op=FilterOp.IN, value=task_ids)
    pending = FilterCondition(field="status", op=FilterOp.EQ, value="pending")
    both = AndFilter.model_validate({"and": [ours, pending]})
    steps["task pages"] = await walk(admin, "/api/v1/tasks", TaskListParams(size=2, filter=both))
    steps["task pages ascending"] = await walk(
        admin, "/api/v1/tasks", TaskListParams(size=2, sort="created:asc", filter=ours)
    )
    canceled = FilterCondition(field="status", op=FilterOp.EQ, value="canceled")
    none = AndFilter.model_validate({"and": [ours, canceled]})
    page = await admin.tasks.list(TaskListParams(size=5, filter=none))
    steps["sdk task list"] = page.model_dump(mode="json")
    # The SDK's typed tasks: each is a job of its own (job_id, on_failure, labels).
    page = await admin.tasks.list(TaskListParams(size=5, filter=ours))
    steps["sdk typed tasks"] = [
        [str(t.id), str(t.job_id), t.on_failure.value, t.labels] for t in page.items
    ]
    steps["task list bad cursor"] = await status_of(
        admin.tasks.list(TaskListParams(cursor="not-a-cursor"))
    )

    session_ids = []
    for number in range(3):
        created = await admin.request(
            "POST", "/api/v1/sessions", json={"name": f"compat-s{number}-{SUFFIX}"}
        )
        session_ids.append(created.json()["id"])
    steps["created sessions"] = session_ids
    named = FilterCondition(field="name", op=FilterOp.ENDSWITH, value=f"-{SUFFIX}")
    steps["session pages"] = await walk(
        admin, "/api/v1/sessions", SessionListParams(size=2, filter=named)
    )
    with_data = SessionListParams(size=5, filter=named, include_payloads=True)
    query = with_data.model_dump(mode="json", exclude_unset=True)
    items = (await admin.request("GET", "/api/v1/sessions", params=query)).json()["items"]
    steps["session payloads"] = [item.get("data") for item in items]
    return steps


async def main():
    steps = {}
    anonymous = KitaruAPIClient(base_url=URL)
    token = await anonymous.auth.login("default", os.environ["ADMIN_PASSWORD"])
    admin = KitaruAPIClient(base_url=URL, api_key=token.access_token)

    user = await admin.users.create(UserCreateRequest(name=f"compat-{SUFFIX}"))
    steps["create user"] = user.model_dump(mode="json")
    activated = await anonymous.users.activate(
        user.id,
        UserActivateRequest(activation_token=user.activation_token, password="compat-pass-1"),
    )
    steps["activate"] = activated.model_dump(mode="json")
    steps["login as activated user"] = bool(
        (await anonymous.auth.login(user.name, "compat-pass-1")).access_token
    )
    deactivated = await admin.users.deactivate(user.id)
    steps["deactivate"] = deactivated.model_dump(mode="json")
    steps["deactivated user login"] = await status_of(
        anonymous.auth.login(user.name, "compat-pass-1")
    )
    service = await admin.service_accounts.create(
        ServiceAccountCreateRequest(name=f"compat-bot-{SUFFIX}")
    )
    steps["create service account"] = service.model_dump(mode="json")

    key = await admin.api_keys.create(ApiKeyCreateRequest(name=f"compat-key-{SUFFIX}"))
    steps["create api key"] = key.model_dump(mode="json")
    rotated = await admin.api_keys.rotate(key.id, ApiKeyRotateRequest(retain_period_minutes=5))
    steps["rotate api key"] = rotated.model_dump(mode="json")
    old = KitaruAPIClient(base_url=URL, api_key=key.key)
    steps["old key within retain window"] = (await old.accounts.get_current()).name
    updated = await admin.api_keys.update(key.id, ApiKeyUpdateRequest(active=False))
    steps["deactivate api key"] = updated.model_dump(mode="json")
    steps["deactivated key"] = await status_of(
        KitaruAPIClient(base_url=URL, api_key=rotated.key).accounts.get_current()
    )
    steps["list accounts"] = [a.name async for a in admin.accounts.iter()]

    fresh = await admin.api_keys.create(ApiKeyCreateRequest(name=f"compat-worker-{SUFFIX}"))
    steps["fresh key"] = fresh.key
    keyed = KitaruAPIClient(base_url=URL, api_key=fresh.key)
    registered = await keyed.workers.create(
        WorkerCreateRequest.model_validate(
            {
                "name": "compat-worker",
                "scope": {"claims": [{"kind": "evaluator"}]},
                "runtime": {"platform": "bare"},
            }
        )
    )
    steps["register worker"] = registered.model_dump(mode="json")
    renewed = await keyed.workers.renew_token(registered.worker.id)
    steps["renew worker token"] = renewed.model_dump(mode="json")
    as_worker = KitaruAPIClient(base_url=URL, api_key=registered.token.get_secret_value())
    steps["worker token on renew route"] = await status_of(
        as_worker.workers.renew_token(registered.worker.id)
    )
    steps.update(await lists(admin))
    emit(steps)  # noqa: F821


asyncio.run(main())
