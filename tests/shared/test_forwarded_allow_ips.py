"""``FORWARDED_ALLOW_IPS``: whose X-Forwarded-For a service believes. Nobody's unless
configured, and only addresses or networks."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from shared.settings import ServiceSettings


def test_by_default_no_peer_is_believed():
    # 127.0.0.1 was the default: every local process could name its own client address.
    assert ServiceSettings().forwarded_allow_ips == ""


def test_addresses_and_networks_are_taken_without_the_spaces_around_them():
    settings = ServiceSettings(forwarded_allow_ips=" 127.0.0.2 , 10.244.0.0/16,fd00::/8 ")
    assert settings.forwarded_allow_ips == "127.0.0.2,10.244.0.0/16,fd00::/8"


@pytest.mark.parametrize("value", ["*", "gateway", "127.0.0.300", "10.244.1.0/16", "127.0.0.2,*"])
def test_anything_else_is_refused_with_the_entry_named(value: str):
    # uvicorn would take a name or a typo for a literal that never matches, and `*` for
    # every peer.
    with pytest.raises(ValidationError, match="is neither an IP address nor a network"):
        ServiceSettings(forwarded_allow_ips=value)
