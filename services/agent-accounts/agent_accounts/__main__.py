"""``python -m agent_accounts [--host H --port P]``."""

from __future__ import annotations

from agent_accounts.settings import Settings
from shared import serve


def main() -> None:
    serve.main(
        app_factory="agent_accounts.app:create_app", settings_factory=Settings, default_port=8104
    )


if __name__ == "__main__":
    main()
