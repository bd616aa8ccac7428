"""Components' secret fields: encrypted at rest, masked in every answer.

A flavor marks its secret fields (:func:`tracking.component.flavors.SecretField`: an s3
store's ``key``, ``secret`` and ``token``). Their values never sit in ``configuration``:
each is a Fernet token in ``encrypted_secrets`` (keys from COMPONENT_SECRET_KEYS), and
answers show :data:`MASK` in its place. An update that sends :data:`MASK` back for a field
keeps the stored secret, so a client may send a component's configuration back as it read
it.

A secret field given as a secret reference (``{{name.key}}``) is no secret: it stays in
``configuration`` in clear and is answered as given, so that the client, which resolves
references when it reads its component's configuration, can resolve it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from shared.errors import BadRequest, Forbidden, PlatformError
from shared.secret_box import SecretBox, SecretUnreadable
from tracking.flavor.custom import AnyFlavor
from tracking.models import StackComponent
from tracking.secret.schemas import SecretReference, secret_reference

MASK = "**********"
"""What answers show for a secret field that has a value."""


class SecretsNotConfigured(Forbidden):
    def __init__(self, fields: list[str]) -> None:
        super().__init__(
            f"This server cannot store the secret fields {fields} of a stack component: "
            "COMPONENT_SECRET_KEYS is not set. Set it, or leave these fields out and give "
            "the server its credentials through its environment."
        )


class SecretsUnreadable(PlatformError):
    """Stored secrets no configured key decrypts (a key dropped too early): the
    operator's to fix, so the reference's 500."""

    def __init__(self, component_name: str) -> None:
        super().__init__(
            f"The secret fields of stack component '{component_name}' cannot be decrypted "
            "with COMPONENT_SECRET_KEYS: was a key dropped before `python -m "
            "tracking.reencrypt` ran?"
        )


def masked_configuration(component: StackComponent) -> dict[str, Any]:
    """The configuration as answered: every stored secret field shows :data:`MASK`."""
    return {**component.configuration, **dict.fromkeys(component.encrypted_secrets, MASK)}


def references(configuration: dict[str, Any]) -> dict[str, SecretReference]:
    """The configuration's fields given as secret references, with what they name."""
    found = {field: secret_reference(value) for field, value in configuration.items()}
    return {field: reference for field, reference in found.items() if reference is not None}


@dataclass(frozen=True)
class ComponentSecrets:
    """The process's box for components' secrets (``None`` without keys)."""

    box: SecretBox | None

    def seal(
        self, flavor: AnyFlavor, configuration: dict[str, Any], stored: dict[str, str]
    ) -> tuple[dict[str, Any], dict[str, str]]:
        """A validated configuration split into its clear fields and its encrypted secret
        fields; a field given as :data:`MASK` keeps its ``stored`` value."""
        referenced = references(configuration)
        sealed = flavor.secret_fields - referenced.keys()
        clear = {k: v for k, v in configuration.items() if k not in sealed}
        given = {k: v for k, v in configuration.items() if k in sealed and v is not None}
        kept = {k: stored[k] for k, v in given.items() if v == MASK and k in stored}
        unmatched = sorted(k for k, v in given.items() if v == MASK and k not in stored)
        if unmatched:
            raise BadRequest(
                f"{unmatched} hold the mask of a stored secret, but this component has no "
                "stored value for them: give the values themselves."
            )
        fresh = {k: str(v) for k, v in given.items() if v != MASK}
        if fresh and self.box is None:
            raise SecretsNotConfigured(sorted(fresh))
        encrypted = {k: self.box.encrypt(v) for k, v in fresh.items()} if self.box else {}
        return clear, {**kept, **encrypted}

    def reveal(self, component: StackComponent) -> dict[str, str]:
        """The component's secret fields in clear (500 when no key decrypts them)."""
        if not component.encrypted_secrets:
            return {}
        if self.box is None:
            raise SecretsUnreadable(component.name)
        try:
            return {k: self.box.decrypt(v) for k, v in component.encrypted_secrets.items()}
        except SecretUnreadable:
            raise SecretsUnreadable(component.name) from None

    def rotate(self, component: StackComponent) -> bool:
        """Re-encrypt the component's secrets under the first key; whether any changed."""
        if self.box is None or not component.encrypted_secrets:
            return False
        rotated = {}
        for field, ciphertext in component.encrypted_secrets.items():
            try:
                again = self.box.rotate(ciphertext)
            except SecretUnreadable:
                raise SecretsUnreadable(component.name) from None
            rotated[field] = again or ciphertext
        if rotated == component.encrypted_secrets:
            return False
        component.encrypted_secrets = rotated
        return True
