"""Tracking's tables. Importing this package registers them on ``SQLModel.metadata``.

Users live in identity's database: ``user_id`` columns hold the creator's id and have no
foreign key.
"""

from tracking.models.artifact import Artifact
from tracking.models.artifact_version import (
    ArtifactVersion,
    ArtifactVersionCount,
    ArtifactVisualization,
    RunMetadata,
)
from tracking.models.code_repository import CodeRepository
from tracking.models.curated_visualization import CuratedVisualization
from tracking.models.deployment import Deployment
from tracking.models.flavor import CustomFlavor
from tracking.models.hook_invocation import HookInvocation, HookInvocationOutput
from tracking.models.logs import Logs
from tracking.models.model import Model, ModelVersion, ModelVersionArtifact, ModelVersionRun
from tracking.models.pipeline import (
    Pipeline,
    PipelineRun,
    PipelineRunCount,
    PipelineSnapshot,
    Schedule,
    StepRun,
    StepRunArtifact,
)
from tracking.models.pipeline_build import PipelineBuild
from tracking.models.project import Project
from tracking.models.run_template import RunTemplate
from tracking.models.run_wait_condition import RunWaitCondition
from tracking.models.secret import Secret
from tracking.models.service_connector import ServiceConnector
from tracking.models.services import Service
from tracking.models.stack import Stack, StackComponent, StackComposition
from tracking.models.tag import Tag, TagResource
from tracking.models.trigger import Trigger, TriggerSnapshot

__all__ = [
    "Artifact",
    "ArtifactVersion",
    "ArtifactVersionCount",
    "ArtifactVisualization",
    "CodeRepository",
    "CuratedVisualization",
    "CustomFlavor",
    "Deployment",
    "HookInvocation",
    "HookInvocationOutput",
    "Logs",
    "Model",
    "ModelVersion",
    "ModelVersionArtifact",
    "ModelVersionRun",
    "Pipeline",
    "PipelineBuild",
    "PipelineRun",
    "PipelineRunCount",
    "PipelineSnapshot",
    "Project",
    "RunMetadata",
    "RunTemplate",
    "RunWaitCondition",
    "Schedule",
    "Secret",
    "Service",
    "ServiceConnector",
    "Stack",
    "StackComponent",
    "StackComposition",
    "StepRun",
    "StepRunArtifact",
    "Tag",
    "TagResource",
    "Trigger",
    "TriggerSnapshot",
]
