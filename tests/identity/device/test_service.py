"""The device flow's pure rules: code formats, the guessing budget, User-Agent parsing."""

from __future__ import annotations

import math
import secrets

import pytest

from identity.device.service import (
    USER_CODE_ALPHABET,
    USER_CODE_LENGTH,
    DeviceDetails,
    normalize_user_code,
)
from identity.settings import Settings
from tests.identity.conftest import make_settings


def test_user_code_guessing_budget_is_within_rfc_8628_bounds():
    # RFC 8628 §5.1: the guesses allowed over a code's lifetime, N / A^L <= 2^-32.
    settings: Settings = make_settings("postgresql://x/x", "redis://x", "x")
    allowed = settings.max_failed_device_auth_attempts
    bits = USER_CODE_LENGTH * math.log2(len(USER_CODE_ALPHABET))
    assert bits == 128
    assert math.log2(allowed) - bits <= -32


def test_failed_attempts_setting_cannot_exceed_the_rfc_example_budget():
    with pytest.raises(ValueError, match="max_failed_device_auth_attempts"):
        make_settings("postgresql://x/x", "redis://x", "x", max_failed_device_auth_attempts=6)


def test_user_code_is_normalized_from_what_people_type():
    code = secrets.token_hex(16)
    typed = f"{code[:4].upper()}-{code[4:16]} {code[16:]}"
    assert normalize_user_code(typed) == code


@pytest.mark.parametrize(
    "raw",
    ["", "0" * 31, "0" * 33, "g" * 32, "0" * 30 + "é0", "'; DROP TABLE oauth_devices; --"],
)
def test_user_code_outside_the_alphabet_or_length_is_rejected_before_lookup(raw: str):
    assert normalize_user_code(raw) is None


def test_zenml_user_agent_is_parsed_into_device_details():
    details = DeviceDetails.from_user_agent(
        "Host/build-box ZenML/0.96.3 Python/3.11.9 OS/Linux-6.1-x86_64", "10.0.0.5"
    )
    assert details == DeviceDetails(
        ip_address="10.0.0.5",
        hostname="build-box",
        os="Linux-6.1-x86_64",
        python_version="3.11.9",
        zenml_version="0.96.3",
    )


@pytest.mark.parametrize(
    "header", [None, "", "zenml/0.96.3", "curl/8.0 nonsense Host/", "Host ZenML Python OS"]
)
def test_other_user_agents_leave_the_details_empty(header: str | None):
    assert DeviceDetails.from_user_agent(header, None) == DeviceDetails()


def test_overlong_user_agent_values_are_cut_to_fit_the_columns():
    details = DeviceDetails.from_user_agent("Host/" + "h" * 5000, "1" * 100)
    assert details.hostname == "h" * 64
    assert details.ip_address == "1" * 64
