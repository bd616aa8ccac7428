"""``python -m webhooks [--host H --port P]``."""

from __future__ import annotations

from shared import serve
from webhooks.settings import Settings


def main() -> None:
    serve.main(app_factory="webhooks.app:create_app", settings_factory=Settings, default_port=8103)


if __name__ == "__main__":
    main()
