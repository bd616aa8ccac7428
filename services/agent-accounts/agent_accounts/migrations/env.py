from sqlmodel import SQLModel

import agent_accounts.models  # noqa: F401  (registers the tables)
from shared.migrations import run_env

run_env(SQLModel.metadata)
