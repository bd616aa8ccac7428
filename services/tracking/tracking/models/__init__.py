"""tracking's tables. Importing this package registers them on ``SQLModel.metadata``."""
