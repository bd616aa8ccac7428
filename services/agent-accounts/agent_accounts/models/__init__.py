"""agent-accounts's tables. Importing this package registers them on ``SQLModel.metadata``."""

from agent_accounts.models.account import Account
from agent_accounts.models.api_key import ApiKey
from agent_accounts.models.device import Device
from agent_accounts.models.task import AgentSession, Blob, Task
from agent_accounts.models.worker import Worker

__all__ = ["Account", "AgentSession", "ApiKey", "Blob", "Device", "Task", "Worker"]
