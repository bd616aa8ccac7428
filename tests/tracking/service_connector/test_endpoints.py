"""``/service_connectors`` and ``/service_connector_types``: the reference's envelope,
credentials sealed and answered only where the reference answers them, its type rules,
and verification as far as the server can go without reaching a user's address."""

from __future__ import annotations

from typing import Any

import httpx

from tests.support.asgi import HostRouter
from tests.tracking.artifact.support import Headers
from tests.tracking.service_connector.support import CONNECTORS, DOCKER, TYPES, create

UNVERIFIED = (
    "failed to verify Kubernetes cluster access: the server could not reach the Kubernetes "
    "API server with these credentials."
)


async def test_types_are_listed_with_their_auth_methods_and_resources(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    listed = (await tracking.get(TYPES, headers=auth)).json()
    by_type = {t["connector_type"]: t for t in listed}
    assert set(by_type) == {"aws", "gcp", "azure", "kubernetes", "docker", "oauth2", "hyperai"}
    docker = by_type["docker"]
    assert [a["auth_method"] for a in docker["auth_methods"]] == ["password"]
    assert docker["resource_types"][0]["resource_type"] == "docker-registry"
    assert docker["resource_types"][0]["supports_instances"] is False
    s3 = [r for r in by_type["aws"]["resource_types"] if r["resource_type"] == "s3-bucket"]
    assert s3[0]["supports_instances"] is True
    filtered = await tracking.get(
        TYPES, params={"resource_type": "kubernetes-cluster"}, headers=auth
    )
    assert {t["connector_type"] for t in filtered.json()} == {"aws", "gcp", "azure", "kubernetes"}
    one = await tracking.get(f"{TYPES}/kubernetes", headers=auth)
    assert one.json()["name"] == "Kubernetes Service Connector"
    missing = await tracking.get(f"{TYPES}/nope", headers=auth)
    assert missing.status_code == 404
    assert missing.json()["detail"][0] == "KeyError"


async def test_create_keeps_secret_fields_sealed_and_answers_them(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    created = await create(tracking, auth)
    assert list(created) == ["body", "metadata", "resources", "id", "permission_denied", "name"]
    body = created["body"]
    assert body["connector_type"]["connector_type"] == "docker"
    assert body["resource_types"] == ["docker-registry"]
    assert body["supports_instances"] is False
    assert created["metadata"]["configuration"] == DOCKER["configuration"]
    assert created["metadata"]["labels"] == {"team": "ml"}
    one = f"{CONNECTORS}/{created['id']}"
    hidden = await tracking.get(one, params={"expand_secrets": "false"}, headers=auth)
    assert hidden.json()["metadata"]["configuration"] == {"registry": "ghcr.io/ann"}
    shown = await tracking.get(one, headers=auth)
    assert shown.json()["metadata"]["configuration"]["password"] == "s3cret"


async def test_list_filters_by_resource_type_and_labels(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    await create(tracking, auth)
    await create(tracking, auth, name="other", labels={"team": "web"})

    def names(page: httpx.Response) -> list[str]:
        assert page.status_code == 200, page.text
        return sorted(item["name"] for item in page.json()["items"])

    assert names(await tracking.get(CONNECTORS, headers=auth)) == ["hub", "other"]
    assert names(
        await tracking.get(CONNECTORS, params={"labels_str": "team=ml"}, headers=auth)
    ) == ["hub"]
    assert names(
        await tracking.get(CONNECTORS, params={"labels_str": '{"team": null}'}, headers=auth)
    ) == ["hub", "other"]
    assert (
        names(await tracking.get(CONNECTORS, params={"resource_type": "s3-bucket"}, headers=auth))
        == []
    )
    plain = await tracking.get(
        CONNECTORS, params={"expand_secrets": "false", "name": "hub"}, headers=auth
    )
    assert plain.json()["items"][0]["metadata"] is None


async def test_bad_configurations_are_400_with_the_reference_reason(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    missing = await tracking.post(
        CONNECTORS, json={**DOCKER, "configuration": {"username": "u"}}, headers=auth
    )
    assert missing.status_code == 400
    assert missing.json()["detail"] == [
        "ValueError",
        "connector configuration is not valid: missing required attribute 'password'",
    ]
    method = await tracking.post(CONNECTORS, json={**DOCKER, "auth_method": "x"}, headers=auth)
    assert method.status_code == 400
    assert "does not support the 'x' authentication method" in method.json()["detail"][1]


async def test_duplicate_names_are_409(tracking: httpx.AsyncClient, auth: Headers) -> None:
    await create(tracking, auth)
    again = await tracking.post(CONNECTORS, json=DOCKER, headers=auth)
    assert again.status_code == 409
    assert again.json()["detail"][0] == "EntityExistsError"


async def test_an_empty_name_is_taken_as_the_reference_takes_it(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    created = await create(tracking, auth, name="")
    assert created["name"] == ""
    other = await create(tracking, auth, name="other")
    path = f"{CONNECTORS}/{other['id']}"
    renamed = await tracking.put(path, json={"name": ""}, headers=auth)
    assert renamed.status_code == 409  # the empty name is taken


async def test_update_replaces_configuration_and_clears_the_resource_id(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    created = await create(tracking, auth, resource_id="ghcr.io")
    one = f"{CONNECTORS}/{created['id']}"
    response = await tracking.put(
        one,
        json={"name": "renamed", "configuration": {"username": "bob", "password": "pw2"}},
        headers=auth,
    )
    assert response.status_code == 200, response.text
    updated = response.json()
    assert updated["name"] == "renamed"
    assert updated["body"]["resource_id"] is None
    assert updated["metadata"]["configuration"] == {"username": "bob", "password": "pw2"}
    assert (await tracking.delete(one, headers=auth)).json() is None
    assert (await tracking.get(one, headers=auth)).status_code == 404


async def test_docker_verifies_its_registry_without_contacting_it(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    response = await tracking.post(f"{CONNECTORS}/verify", json=DOCKER, headers=auth)
    assert response.status_code == 200, response.text
    result = response.json()
    assert result["error"] is None
    assert result["resources"] == [
        {"resource_type": "docker-registry", "resource_ids": ["ghcr.io"], "error": None}
    ]
    created = await create(tracking, auth)
    again = await tracking.put(f"{CONNECTORS}/{created['id']}/verify", headers=auth)
    assert again.json()["id"] == created["id"]
    listed = (await tracking.get(f"{CONNECTORS}/resources", headers=auth)).json()
    assert [r["resources"][0]["resource_ids"] for r in listed] == [["ghcr.io"]]


async def test_types_needing_a_cloud_sdk_answer_501_in_one_sentence(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    aws = {
        "name": "aws",
        "connector_type": "aws",
        "auth_method": "secret-key",
        "resource_types": ["s3-bucket"],
        "resource_id": "s3://bucket",
        "configuration": {
            "region": "eu-west-1",
            "aws_access_key_id": "AKIA",
            "aws_secret_access_key": "k",
        },
    }
    response = await tracking.post(f"{CONNECTORS}/verify", json=aws, headers=auth)
    assert response.status_code == 501
    assert response.json()["detail"] == [
        "NotImplementedError",
        "The AWS Service Connector needs boto3 (the AWS SDK) on the server, which this "
        "server does not carry.",
    ]
    created = await create(tracking, auth, **aws)
    listed = (await tracking.get(f"{CONNECTORS}/resources", headers=auth)).json()
    assert listed[0]["resources"] == [
        {"resource_type": "s3-bucket", "resource_ids": ["s3://bucket"], "error": None}
    ]
    stack = await tracking.post(
        f"{CONNECTORS}/full_stack_resources",
        params={"connector_uuid": created["id"]},
        headers=auth,
    )
    assert stack.status_code == 501
    client = await tracking.get(f"{CONNECTORS}/{created['id']}/client", headers=auth)
    assert client.status_code == 501


K8S_CONFIG = {"server": "https://k8s.test", "token": "good", "cluster_name": "prod"}
KUBERNETES: dict[str, Any] = {
    "name": "k8s",
    "connector_type": "kubernetes",
    "auth_method": "token",
    "resource_types": [],
    "configuration": K8S_CONFIG,
}


async def api_server(scope: Any, receive: Any, send: Any) -> None:
    """A Kubernetes API server's ``/version``, for the token ``good`` only."""
    headers = dict(scope["headers"])
    allowed = headers.get(b"authorization") == b"Bearer good" and scope["path"] == "/version"
    body = b'{"gitVersion": "v1.31.0"}' if allowed else b'{"kind": "Status"}'
    status = 200 if allowed else 401
    await send({"type": "http.response.start", "status": status, "headers": []})
    await send({"type": "http.response.body", "body": body})


async def test_kubernetes_verifies_by_asking_the_api_server_as_the_connector(
    tracking: httpx.AsyncClient, auth: Headers, router: HostRouter
) -> None:
    router.register("k8s.test/", api_server)
    response = await tracking.post(f"{CONNECTORS}/verify", json=KUBERNETES, headers=auth)
    assert response.status_code == 200, response.text
    assert response.json()["error"] is None
    assert response.json()["resources"] == [
        {"resource_type": "kubernetes-cluster", "resource_ids": ["prod"], "error": None}
    ]
    bad = {**KUBERNETES, "configuration": {**K8S_CONFIG, "token": "bad"}}
    refused = (await tracking.post(f"{CONNECTORS}/verify", json=bad, headers=auth)).json()
    assert refused["error"] == UNVERIFIED
    created = await create(tracking, auth, **KUBERNETES)  # the token is sealed, then used
    again = await tracking.put(f"{CONNECTORS}/{created['id']}/verify", headers=auth)
    assert again.json()["resources"][0]["resource_ids"] == ["prod"]


async def test_an_unreachable_cluster_is_one_sentence_not_a_500(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    for server in ("https://nowhere.test", "http://k8s.test", "not a url", "https://a:b@k8s.test"):
        config = {**K8S_CONFIG, "server": server}
        response = await tracking.post(
            f"{CONNECTORS}/verify", json={**KUBERNETES, "configuration": config}, headers=auth
        )
        assert response.status_code == 200, response.text
        assert response.json()["error"] == UNVERIFIED
        assert response.json()["resources"][0]["error"] == UNVERIFIED


async def test_a_linked_component_shows_its_connector_and_holds_it(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    connector = await create(tracking, auth)
    component = {
        "name": "linked",
        "type": "orchestrator",
        "flavor": "local",
        "configuration": {},
        "connector": connector["id"],
        "connector_resource_id": "ghcr.io",
    }
    response = await tracking.post("/api/v1/components", json=component, headers=auth)
    assert response.status_code == 200, response.text
    created = response.json()
    nested = created["metadata"]["connector"]
    assert nested["id"] == connector["id"]
    assert nested["body"]["connector_type"] == "docker"
    assert nested["metadata"] is None
    assert created["metadata"]["connector_resource_id"] == "ghcr.io"
    listed = await tracking.get(
        "/api/v1/components", params={"connector_id": connector["id"]}, headers=auth
    )
    assert [c["name"] for c in listed.json()["items"]] == ["linked"]
    one = f"{CONNECTORS}/{connector['id']}"
    refused = await tracking.delete(one, headers=auth)
    assert refused.status_code == 403
    assert "still referenced by 1 stack components" in refused.json()["detail"][1]
    retyped = await tracking.put(one, json={"resource_id": "docker.io"}, headers=auth)
    assert retyped.status_code == 403
    unlinked = await tracking.put(
        f"/api/v1/components/{created['id']}", json={"connector": None}, headers=auth
    )
    assert unlinked.json()["metadata"]["connector"] is None
    assert (await tracking.delete(one, headers=auth)).status_code == 200


async def test_a_component_naming_an_unknown_connector_is_404(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    component = {
        "name": "linked",
        "type": "orchestrator",
        "flavor": "local",
        "configuration": {},
        "connector": "6f1d3a44-3a9e-4c27-9d3e-2a4b8e1f0c11",
    }
    response = await tracking.post("/api/v1/components", json=component, headers=auth)
    assert response.status_code == 404
    assert response.json()["detail"][0] == "KeyError"


async def test_configuration_values_take_their_schemas_types(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    as_text = {**K8S_CONFIG, "insecure": "true", "server": "https://k8s.test"}
    created = await create(tracking, auth, **{**KUBERNETES, "configuration": as_text})
    assert created["metadata"]["configuration"]["insecure"] is True
    for wrong in ({"server": 6443}, {"insecure": "maybe"}, {"cluster_name": ["a"]}):
        config = {**K8S_CONFIG, **wrong}
        response = await tracking.post(
            CONNECTORS, json={**KUBERNETES, "name": "wrong", "configuration": config}, headers=auth
        )
        assert response.status_code == 400, response.text
        assert "is not a valid" in response.json()["detail"][1]


async def test_the_reference_lists_parameters_are_accepted(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    created = await create(tracking, auth)
    params = {
        "scope_user": created["body"]["user_id"],
        "project_name_or_id": "default",
        "sort_by": "desc:connector_type",
        "connector_type": "docker",
        "auth_method": "contains:pass",
    }
    response = await tracking.get(CONNECTORS, params=params, headers=auth)
    assert response.status_code == 200, response.text
    assert [c["name"] for c in response.json()["items"]] == ["hub"]
    legacy_path = "/api/v1/workspaces/default/service_connectors"
    legacy = await tracking.post(legacy_path, json={**DOCKER, "name": "legacy"}, headers=auth)
    assert legacy.status_code == 200, legacy.text
    assert (await tracking.get(legacy_path, headers=auth)).json()["total"] == 2
    someone = {"scope_user": "6f1d3a44-3a9e-4c27-9d3e-2a4b8e1f0c11"}
    assert (await tracking.get(CONNECTORS, params=someone, headers=auth)).json()["total"] == 0


async def test_a_docker_connectors_client_is_itself_for_a_resource_it_reaches(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    created = await create(tracking, auth)
    client = f"{CONNECTORS}/{created['id']}/client"
    response = await tracking.get(client, params={"resource_id": "ghcr.io/ann/x"}, headers=auth)
    assert response.status_code == 200, response.text
    assert response.json()["metadata"]["configuration"]["password"] == "s3cret"
    wrong = await tracking.get(client, params={"resource_type": "s3-bucket"}, headers=auth)
    assert wrong.status_code == 400
    assert "does not support resource type: 's3-bucket'" in wrong.json()["detail"][1]
    bad = await tracking.get(client, params={"resource_id": "not a registry!"}, headers=auth)
    assert bad.status_code == 400


async def test_full_stack_resources_take_one_connector_exactly(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    created = await create(tracking, auth)
    url = f"{CONNECTORS}/full_stack_resources"
    info = {"type": "docker", "auth_method": "password", "configuration": DOCKER["configuration"]}
    both = await tracking.post(
        url, params={"connector_uuid": created["id"]}, json=info, headers=auth
    )
    assert both.status_code == 400
    neither = await tracking.post(url, headers=auth)
    assert (
        neither.json()["detail"][1] == "Either connector_info or connector_uuid must be provided."
    )
    answer = await tracking.post(url, json=info, headers=auth)
    assert answer.json() == {
        "connector_type": "docker",
        "components_resources_info": {
            "artifact_store": [],
            "orchestrator": [],
            "container_registry": [],
        },
    }
