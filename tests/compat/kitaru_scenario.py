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
    emit(steps)  # noqa: F821


asyncio.run(main())
