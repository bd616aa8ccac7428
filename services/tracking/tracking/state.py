"""What tracking's handlers read of the lifespan's state, typed (see :mod:`shared.state`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from shared.state import ServiceState

if TYPE_CHECKING:
    from tracking.artifact_version.download import DownloadTokens
    from tracking.component.secrets import ComponentSecrets
    from tracking.secret.service import SecretCipher
    from tracking.service_connector.probe import ClusterProbe
    from tracking.settings import Settings
    from tracking.store import ArtifactStores

__all__ = ["TrackingState"]


@dataclass(frozen=True, slots=True)
class TrackingState(ServiceState):
    settings: Settings
    artifact_stores: ArtifactStores
    downloads: DownloadTokens
    component_secrets: ComponentSecrets
    secret_cipher: SecretCipher
    cluster_probe: ClusterProbe
