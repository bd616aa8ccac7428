"""The error tree and its wire shapes (``shared.errors`` rendered by ``shared.responses``)."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel, ValidationError

from shared import errors
from shared.responses import error_response


def rendered(exc: errors.PlatformError, request_id: str | None = None):
    response = error_response(exc, request_id)
    return response.status_code, json.loads(bytes(response.body)), response.headers


@pytest.mark.parametrize(
    ("error", "status", "wire_name"),
    [
        (errors.PlatformError, 500, "RuntimeError"),
        (errors.BadRequest, 400, "ValueError"),
        (errors.Unauthorized, 401, "CredentialsNotValid"),
        (errors.AuthorizationFailed, 401, "AuthorizationException"),
        (errors.Forbidden, 403, "IllegalOperationError"),
        (errors.NotFound, 404, "KeyError"),
        (errors.DoesNotExist, 404, "DoesNotExistException"),
        (errors.MethodNotAllowed, 405, "MethodNotAllowedError"),
        (errors.Conflict, 409, "EntityExistsError"),
        (errors.PayloadTooLarge, 413, "PayloadTooLarge"),
        (errors.UnsupportedMediaType, 415, "UnsupportedMediaType"),
        (errors.Unprocessable, 422, "ValueError"),
        (errors.ServiceUnavailable, 503, "ServiceUnavailable"),
    ],
)
def test_error_renders_wire_name_and_message_with_its_status(error, status, wire_name):
    code, body, headers = rendered(error("Something went wrong."))
    assert code == status
    assert body == {"detail": [wire_name, "Something went wrong."]}
    assert headers["content-type"] == "application/json"


def test_error_response_carries_the_request_id():
    _, _, headers = rendered(errors.NotFound("gone"), request_id="1234abcd")
    assert headers["x-request-id"] == "1234abcd"


def test_unauthorized_carries_www_authenticate_bearer():
    _, _, headers = rendered(errors.Unauthorized("Authentication error: expired"))
    assert headers["www-authenticate"] == "Bearer"


def test_explicit_headers_override_the_default_www_authenticate():
    exc = errors.Unauthorized("bad", headers={"WWW-Authenticate": 'Bearer error="invalid_token"'})
    _, _, headers = rendered(exc)
    assert headers["www-authenticate"] == 'Bearer error="invalid_token"'


def test_default_headers_are_not_shared_between_instances():
    first = errors.Unauthorized("a")
    first.headers["X-Extra"] = "1"
    assert "X-Extra" not in errors.Unauthorized("b").headers


def test_too_many_requests_carries_retry_after_of_at_least_one_second():
    code, body, headers = rendered(errors.TooManyRequests("Slow down.", retry_after=0))
    assert code == 429
    assert body == {"detail": ["TooManyRequests", "Slow down."]}
    assert headers["retry-after"] == "1"


def test_http_detail_error_renders_a_string_detail_with_its_status():
    exc = errors.HTTPDetailError(401, "Not authenticated", headers={"WWW-Authenticate": "Bearer"})
    code, body, headers = rendered(exc)
    assert code == 401
    assert body == {"detail": "Not authenticated"}
    assert headers["www-authenticate"] == "Bearer"


def test_oauth_error_renders_error_description_and_null_uri():
    code, body, _ = rendered(errors.OAuthError("authorization_pending", "Not yet authorized."))
    assert code == 400
    assert body == {
        "error": "authorization_pending",
        "error_description": "Not yet authorized.",
        "error_uri": None,
    }


def test_oauth_error_keeps_a_custom_status():
    code, _, _ = rendered(errors.OAuthError("invalid_client", "Unknown client.", status_code=401))
    assert code == 401


class Body(BaseModel):
    name: str
    count: int


def test_request_validation_failed_renders_loc_msg_type_list_with_422():
    with pytest.raises(ValidationError) as info:
        Body.model_validate({"count": "x"})
    code, body, _ = rendered(errors.RequestValidationFailed.from_pydantic(info.value, "body"))
    assert code == 422
    assert body == {
        "detail": [
            {"loc": ["body", "name"], "msg": "Field required", "type": "missing"},
            {
                "loc": ["body", "count"],
                "msg": "Input should be a valid integer, unable to parse string as an integer",
                "type": "int_parsing",
            },
        ]
    }


def test_request_validation_failed_does_not_echo_the_input():
    with pytest.raises(ValidationError) as info:
        Body.model_validate({"name": "n", "count": "hunter2-secret"})
    _, body, _ = rendered(errors.RequestValidationFailed.from_pydantic(info.value, "body"))
    assert "hunter2-secret" not in json.dumps(body)


def test_request_validation_failed_single_builds_one_error():
    exc = errors.RequestValidationFailed.single(["query", "page"], "Must be positive.")
    assert exc.body() == {
        "detail": [{"loc": ["query", "page"], "msg": "Must be positive.", "type": "value_error"}]
    }
    assert exc.message == "query.page: Must be positive."


class _Refusal(Exception):
    """What SQLAlchemy wraps: the driver's error, with PostgreSQL's SQLSTATE."""

    def __init__(self, sqlstate: str | None, message: str) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate


class _Wrapped(Exception):
    def __init__(self, orig: Exception) -> None:
        super().__init__(str(orig))
        self.orig = orig


@pytest.mark.parametrize("sqlstate", ["22021", "22P05"])
def test_a_refused_nul_is_a_422_that_says_so(sqlstate: str) -> None:
    refused = errors.refused_value(_Wrapped(_Refusal(sqlstate, "invalid byte sequence")))
    assert refused is not None
    assert (refused.status_code, refused.message) == (422, errors.NUL_IN_TEXT)


def test_another_data_exception_is_a_422_with_postgresqls_first_line() -> None:
    orig = _Refusal("22001", "value too long for type character varying(255)\nDETAIL: x")
    refused = errors.refused_value(_Wrapped(orig))
    assert refused is not None
    assert refused.message == "Invalid value: value too long for type character varying(255)"


@pytest.mark.parametrize("sqlstate", ["23505", "40001", None])
def test_other_database_errors_are_not_the_clients(sqlstate: str | None) -> None:
    assert errors.refused_value(_Wrapped(_Refusal(sqlstate, "no"))) is None
    assert errors.refused_value(RuntimeError("no orig")) is None
