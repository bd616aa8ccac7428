"""agent-accounts's tables. Importing this package registers them on ``SQLModel.metadata``."""
