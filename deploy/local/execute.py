"""``python -m deploy.local exec [flags] SERVICE [ARGS ...]``: one command of a service
(``exec identity reset-password default``) with the environment the launcher gives that
service: its database, the stack's Valkey, its generated secrets.

It needs a data dir a stack has run with (its ``secrets.json``), and runs beside a running
stack as well as without one: its input, output and exit code are the caller's. Beside a
running stack the command replaces the launcher's process. Without it, when the stack's
database is the embedded PostgreSQL, that server is started for the command alone (the
data dir locked meanwhile, as a launcher locks it) and stopped after it. When the stack's
Valkey does not answer, a note says so first: a command that needs Redis cannot work then
(identity's exit 1, saying Redis cannot be reached); one that needs only its database can.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from typing import NoReturn, TextIO

from deploy.local import datadir, postgres
from deploy.local.datadir import SetupError
from deploy.local.environment import embedded_postgres, pgdata, redis_url, service_environment
from deploy.local.options import REPO_ROOT, Command, Options
from deploy.local.plan import module_problem
from deploy.local.probes import valkey_answers
from deploy.local.secrets import FILE_NAME, load_or_create


def prepare(
    command: Command, environ: Mapping[str, str]
) -> tuple[list[str], dict[str, str], list[str]]:
    """The command line and environment of ``command``, and notes about the secrets file
    (as the launcher's); :class:`SetupError` (or :class:`~deploy.local.secrets.SecretsError`)
    when it cannot run."""
    options, service = command.options, command.service
    if not (options.data_dir / FILE_NAME).exists():
        raise SetupError(
            f"no stack has run with the data dir {options.data_dir}: start it once "
            "(make run), or name the data dir it runs with (--data-dir)"
        )
    problem = module_problem(service.module)
    if problem is not None:
        raise SetupError(f"{service.name} cannot run: {problem}")
    secrets, notes = load_or_create(options.data_dir, options.stack)
    env = service_environment(options, service, secrets, environ)
    return [sys.executable, "-m", service.module, *command.args], env, notes


def valkey_note(command: Command) -> str | None:
    """What to say before the command when the stack's Valkey does not answer."""
    if asyncio.run(valkey_answers(command.options.ports.valkey)) is None:
        return None
    return (
        f"note: the stack's Valkey does not answer at {redis_url(command.options)}: is the "
        "stack running (with these flags)? A command that needs Redis cannot work without it."
    )


def run(command: Command, environ: Mapping[str, str], err: TextIO) -> NoReturn:
    """Replace this process with the command (never returns)."""
    argv, env, notes = prepare(command, environ)
    valkey = valkey_note(command)
    for note in [*(f"note: {n}" for n in notes), *([valkey] if valkey else [])]:
        print(note, file=err)
    sys.stdout.flush()
    err.flush()
    options = command.options
    if embedded_postgres(options, environ) and postgres.leftover(pgdata(options)) is None:
        sys.exit(run_with_postgres(options, argv, env))
    os.chdir(REPO_ROOT)  # where the launcher runs every service
    os.execve(argv[0], argv, env)  # noqa: S606 (the service's own interpreter, no shell)


def run_with_postgres(options: Options, argv: Sequence[str], env: Mapping[str, str]) -> int:
    """Run the command while the stack's embedded PostgreSQL runs for it; its exit code."""
    with (
        datadir.exclusive(options.data_dir),
        postgres.running(
            pgdata(options),
            options.ports.postgres,
            postgres.STACK_SETTINGS,
            log=options.data_dir / "run" / "postgres-exec.log",
        ),
    ):
        child = subprocess.Popen(argv, env=env, cwd=REPO_ROOT)
        while True:
            try:
                return child.wait()
            except KeyboardInterrupt:
                continue  # the command got the same Ctrl-C: its exit ends the wait
