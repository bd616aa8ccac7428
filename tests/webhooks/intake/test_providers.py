"""Known-answer signature vectors (security.md §2.2) and each provider's header rules,
on the providers themselves."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import random
from datetime import UTC, datetime

import pytest
import standardwebhooks
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.datastructures import Headers

from webhooks.intake.providers import PayloadError
from webhooks.intake.providers.base import INVALID_SIGNATURE, json_object
from webhooks.intake.providers.chat import Chat
from webhooks.intake.providers.codehost import Codehost
from webhooks.intake.providers.custom import Custom, standard_webhooks_signature
from webhooks.intake.providers.task_tracker import TaskTracker
from webhooks.intake.signatures import hmac_hex

GITHUB_SECRET = "It's a Secret to Everybody"
GITHUB_BODY = b"Hello, World!"
GITHUB_HEX = "757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"

SLACK_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
SLACK_TS = 1531420618
SLACK_BODY = (
    b"token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&"
    b"channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&"
    b"command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2F"
    b"commands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&"
    b"trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"
)
SLACK_SIGNATURE = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"

SW_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
SW_ID = "msg_p5jXN8AQM9LWM0D4loKWxJek"
SW_TS = 1614265330
SW_BODY = b'{"test": 2432232314}'
SW_SIGNATURE = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="


@pytest.mark.parametrize("name", ["X-Hub-Signature-256", "X-Codehost-Signature-256"])
def test_codehost_accepts_the_github_known_answer(name):
    headers = Headers({name: f"sha256={GITHUB_HEX}"})
    assert Codehost().authenticate(GITHUB_BODY, headers, GITHUB_SECRET, 0) is None


def test_codehost_rejects_one_flipped_body_bit():
    headers = Headers({"X-Hub-Signature-256": f"sha256={GITHUB_HEX}"})
    error = Codehost().authenticate(b"Hello, World?", headers, GITHUB_SECRET, 0)
    assert error == "Invalid webhook signature."


def test_codehost_rejects_an_unprefixed_signature_as_malformed():
    headers = Headers({"X-Hub-Signature-256": GITHUB_HEX})
    error = Codehost().authenticate(GITHUB_BODY, headers, GITHUB_SECRET, 0)
    assert error == "Missing or malformed x-hub-signature-256 header."


@pytest.mark.parametrize("prefix", ["X-Slack", "X-Chat"])
def test_chat_accepts_the_slack_known_answer(prefix):
    headers = Headers(
        {f"{prefix}-Signature": SLACK_SIGNATURE, f"{prefix}-Request-Timestamp": str(SLACK_TS)}
    )
    assert Chat(300).authenticate(SLACK_BODY, headers, SLACK_SECRET, SLACK_TS + 299) is None


@pytest.mark.parametrize("offset", [301, -301])
def test_chat_rejects_a_timestamp_outside_the_window_either_way(offset):
    headers = Headers(
        {"X-Slack-Signature": SLACK_SIGNATURE, "X-Slack-Request-Timestamp": str(SLACK_TS)}
    )
    error = Chat(300).authenticate(SLACK_BODY, headers, SLACK_SECRET, SLACK_TS + offset)
    assert error == "Slack request timestamp is outside the allowed tolerance."


@pytest.mark.parametrize("timestamp", ["", "12a", "1" * 21, "-5"])
def test_chat_rejects_a_malformed_timestamp(timestamp):
    headers = Headers(
        {"X-Slack-Signature": SLACK_SIGNATURE, "X-Slack-Request-Timestamp": timestamp}
    )
    error = Chat(300).authenticate(SLACK_BODY, headers, SLACK_SECRET, SLACK_TS)
    assert error == "Missing or malformed x-slack-request-timestamp header."


@pytest.mark.parametrize("digest", [GITHUB_HEX, GITHUB_HEX.upper()])
@pytest.mark.parametrize("name", ["X-Signature", "X-Tasks-Signature"])
def test_tasks_accepts_the_known_answer_as_bare_hex_in_either_case(name, digest):
    headers = Headers({name: digest})
    assert TaskTracker().authenticate(GITHUB_BODY, headers, GITHUB_SECRET, 0) is None


def test_tasks_without_a_signature_is_refused():
    assert TaskTracker().authenticate(GITHUB_BODY, Headers({}), GITHUB_SECRET, 0) == (
        "Missing x-signature header."
    )


def test_custom_accepts_the_standard_webhooks_known_answer():
    headers = Headers(
        {"webhook-id": SW_ID, "webhook-timestamp": str(SW_TS), "webhook-signature": SW_SIGNATURE}
    )
    assert Custom(300).authenticate(SW_BODY, headers, SW_SECRET, SW_TS) is None


def test_custom_accepts_any_valid_v1_among_several_signatures():
    signatures = f"v1,bm90IHRoaXMgb25l v1a,ignored {SW_SIGNATURE}"
    headers = Headers(
        {"webhook-id": SW_ID, "webhook-timestamp": str(SW_TS), "webhook-signature": signatures}
    )
    assert Custom(300).authenticate(SW_BODY, headers, SW_SECRET, SW_TS) is None


def test_custom_refuses_a_standard_webhooks_delivery_five_minutes_old():
    headers = Headers(
        {"webhook-id": SW_ID, "webhook-timestamp": str(SW_TS), "webhook-signature": SW_SIGNATURE}
    )
    error = Custom(300).authenticate(SW_BODY, headers, SW_SECRET, SW_TS + 301)
    assert error == "Webhook timestamp is outside the allowed tolerance."


# Standard Webhooks' own Python library as the oracle (security.md §2.3): what it signs
# we accept, and what we sign it verifies; secrets as senders show them, padded or not.
_SW_SECRETS = st.builds(
    lambda key, padded: "whsec_" + base64.b64encode(key).decode().rstrip("" if padded else "="),
    st.binary(min_size=24, max_size=64),
    st.booleans(),
)
_SW_IDS = st.text(
    st.characters(min_codepoint=33, max_codepoint=126, exclude_characters="."),
    min_size=1,
    max_size=40,
)


@settings(max_examples=200, deadline=None)
@given(
    secret=_SW_SECRETS,
    msg_id=_SW_IDS,
    body=st.text(max_size=200),
    age=st.integers(min_value=-300, max_value=300),
)
def test_custom_accepts_what_the_standard_webhooks_library_signs(secret, msg_id, body, age):
    sent_at = SW_TS + age
    signature = standardwebhooks.Webhook(secret).sign(
        msg_id, datetime.fromtimestamp(sent_at, UTC), body
    )
    headers = Headers(
        {"webhook-id": msg_id, "webhook-timestamp": str(sent_at), "webhook-signature": signature}
    )
    raw = body.encode()
    assert Custom(300).authenticate(raw, headers, secret, SW_TS) is None
    flipped = bytes([raw[0] ^ 1]) + raw[1:] if raw else b" "
    assert Custom(300).authenticate(flipped, headers, secret, SW_TS) == INVALID_SIGNATURE


@settings(max_examples=100, deadline=None)
@given(secret=_SW_SECRETS, msg_id=_SW_IDS, body=st.text(max_size=200))
def test_the_standard_webhooks_library_verifies_what_we_sign(secret, msg_id, body):
    sent_at = str(int(datetime.now(UTC).timestamp()))
    signature = standard_webhooks_signature(secret, msg_id, sent_at, body.encode())
    headers = {
        "webhook-id": msg_id,
        "webhook-timestamp": sent_at,
        "webhook-signature": "v1," + signature,
    }
    standardwebhooks.Webhook(secret).verify(body, headers, json_parse=False)


@pytest.mark.parametrize("name", ["X-ZenML-Signature-256", "X-Webhook-Signature-256"])
def test_custom_accepts_the_github_style_known_answer(name):
    headers = Headers({name: f"sha256={GITHUB_HEX}"})
    assert Custom(300).authenticate(GITHUB_BODY, headers, GITHUB_SECRET, 0) is None


def test_codehost_pre_validation_needs_the_event_header():
    with pytest.raises(PayloadError, match="X-Codehost-Event"):
        Codehost().pre_validate(Headers({}))


@pytest.mark.parametrize("event", ["ping", "star", "check_run"])
def test_codehost_pre_validation_ignores_unsupported_events(event):
    assert Codehost().pre_validate(Headers({"X-Codehost-Event": event})) is False


def test_tasks_delivery_id_is_the_senders_webhook_and_sorted_history_ids():
    body = (
        b'{"webhook_id": "w1", "event": "taskCreated", "history_items": [{"id": "9"}, {"id": 3}]}'
    )
    delivery, _ = TaskTracker().parse(body, Headers({}))
    assert delivery.key == "w1:3,9"
    assert delivery.event_type == "taskCreated"


_BODIES = [
    b'{"a": 1, "b": [true, false, null], "c": {"d": "\\u00e9"}}',
    b'{"a": 1, "a": 2}',  # the last of duplicate keys wins
    b'{"big": 123456789012345678901234567890}',  # past 64 bits
    b'{"u64": 18446744073709551616, "i64": -9223372036854775809, "ok": 9223372036854775807}',
    b'{"in a string": "18446744073709551616", "f": 12345678901234567890.5}',
    b'{"nan": NaN, "inf": -Infinity}',
    b'\xef\xbb\xbf{"bom": true}',
    '{"utf16": 1}'.encode("utf-16-le"),
    b'{"surrogate": "\\ud800"}',
    b'{"float": 1e400, "neg": -0, "small": 5e-324}',
    b'{"fractions": [0.1, 1.5, -0.0, 2.675, 1.7976931348623157e308, 4.9e-324]}',
    b'{"exponents": [1e5, 1E5, 1e-5, 2E+3, -3e0]}',
    b'{"ints": [9223372036854775807, 9223372036854775808, 18446744073709551615]}',
    b'{"19 digits": 1234567890123456789, "18 digits": 123456789012345678}',
    b'{"id": 4711, "in a string": "v1.2.3 3e4 12345678901234567890"}',
    b"null",
    b'{"t": true}\n\t ',
    b' \r\n{"leading": "whitespace"}',
    b'{"deep": ' + b"[" * 2000 + b"]" * 2000 + b"}",
    b"[1, 2]",
    b'"text"',
    b"{not json}",
    b"",
    b'{"a": 1} trailing',
    b'{"bad utf8": "\xff"}',
]


@pytest.mark.parametrize("body", _BODIES)
def test_a_payload_reads_as_the_json_module_reads_it(body):
    try:
        expected = json.loads(body)
    except (ValueError, RecursionError):
        expected = None
    if not isinstance(expected, dict):
        with pytest.raises(PayloadError):
            json_object(body)
        return
    got = json_object(body)
    assert json.dumps(got, sort_keys=True) == json.dumps(expected, sort_keys=True)


_JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=100, deadline=None)
@given(payload=st.dictionaries(st.text(), _JSON_VALUES, max_size=6), ensure_ascii=st.booleans())
def test_any_object_reads_as_the_json_module_reads_it(payload, ensure_ascii):
    body = json.dumps(payload, ensure_ascii=ensure_ascii).encode()
    assert json.dumps(json_object(body), sort_keys=True) == json.dumps(
        json.loads(body), sort_keys=True
    )


@pytest.mark.parametrize("key_length", [0, 1, 32, 63, 64, 65, 200])
def test_signatures_are_the_standard_library_hmac(key_length):
    rng = random.Random(key_length)
    for _ in range(30):
        key = rng.randbytes(key_length)
        parts = [rng.randbytes(rng.randrange(0, 300)) for _ in range(rng.randrange(1, 4))]
        expected = hmac.new(key, b"".join(parts), hashlib.sha256).hexdigest()
        assert hmac_hex(key, *parts) == expected
        assert hmac_hex(key, *parts) == expected  # the kept states are not consumed
