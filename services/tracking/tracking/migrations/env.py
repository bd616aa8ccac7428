from sqlmodel import SQLModel

import tracking.models  # noqa: F401  (registers the tables)
from shared.migrations import run_env

run_env(SQLModel.metadata)
