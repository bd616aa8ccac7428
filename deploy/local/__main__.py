"""``python -m deploy.local``: run the whole local stack in the foreground."""

from __future__ import annotations

import asyncio
import os
import sys

from deploy.config import StackConfigError
from deploy.local.launcher import run
from deploy.local.options import UsageError, parse_options


def main(argv: list[str] | None = None) -> int:
    """Parse the command line, run the stack, return the exit code (2: bad input)."""
    try:
        options = parse_options(sys.argv[1:] if argv is None else argv, os.environ)
    except (StackConfigError, UsageError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return asyncio.run(run(options, os.environ, sys.stdout))


if __name__ == "__main__":
    sys.exit(main())
