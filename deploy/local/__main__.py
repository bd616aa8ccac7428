"""``python -m deploy.local``: run the whole local stack in the foreground.
``python -m deploy.local exec [flags] SERVICE [ARGS ...]``: run one command of a service
with the environment the launcher gives it (:mod:`deploy.local.execute`)."""

from __future__ import annotations

import asyncio
import os
import sys

from deploy.config import StackConfigError
from deploy.local import execute
from deploy.local.datadir import SetupError
from deploy.local.launcher import run
from deploy.local.options import UsageError, parse_exec, parse_options
from deploy.local.postgres import PostgresError
from deploy.local.secrets import SecretsError


def main(argv: list[str] | None = None) -> int:
    """Parse the command line, run the stack (or ``exec`` a command), return the exit code
    (2: bad input)."""
    args = sys.argv[1:] if argv is None else argv
    try:
        if args[:1] == ["exec"]:
            execute.run(parse_exec(args[1:], os.environ), os.environ, sys.stderr)
        options = parse_options(args, os.environ)
    except (StackConfigError, UsageError, SetupError, SecretsError, PostgresError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return asyncio.run(run(options, os.environ, sys.stdout))


if __name__ == "__main__":
    sys.exit(main())
