"""A stand-in worker for launcher tests: waits for SIGTERM, then exits 0."""

from __future__ import annotations

import os
import signal
import sys
import time
from types import FrameType


def main() -> None:
    def stop(signum: int, frame: FrameType | None) -> None:
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    sys.stdout.write(f"fake worker up (client {os.environ.get('SERVICE_CLIENT_ID')})\n")
    sys.stdout.flush()
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
