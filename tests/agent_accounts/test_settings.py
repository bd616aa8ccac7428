from __future__ import annotations

import pytest
from cryptography.fernet import Fernet
from pydantic import SecretStr, ValidationError

from agent_accounts.settings import Settings

SIGNING = SecretStr("x" * 43)


def test_secret_encryption_key_must_be_fernet_keys():
    with pytest.raises(ValidationError, match="key #2 is not a Fernet key"):
        Settings(
            jwt_signing_keys=SIGNING,
            server_secret_encryption_key=SecretStr(f"{Fernet.generate_key().decode()},nope"),
        )


def test_secret_cipher_encrypts_with_the_first_key_and_decrypts_with_all():
    old, new = Fernet.generate_key(), Fernet.generate_key()
    sealed = Fernet(old).encrypt(b"secret")
    settings = Settings(
        jwt_signing_keys=SIGNING,
        server_secret_encryption_key=SecretStr(f"{new.decode()}, {old.decode()}"),
    )

    cipher = settings.secret_cipher()
    assert cipher is not None
    assert cipher.decrypt(sealed) == b"secret"
    assert Fernet(new).decrypt(cipher.encrypt(b"x")) == b"x"
    assert Settings(jwt_signing_keys=SIGNING).secret_cipher() is None
