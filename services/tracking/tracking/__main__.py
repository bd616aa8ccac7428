"""``python -m tracking [--host H --port P]``."""

from __future__ import annotations

from shared import serve
from tracking.settings import Settings


def main() -> None:
    serve.main(app_factory="tracking.app:create_app", settings_factory=Settings, default_port=8102)


if __name__ == "__main__":
    main()
