"""Running a command's coroutine: the one place where failures become exit codes.

Every expected failure is a :class:`CliError` (or a store or URL error, converted here)
printed as one line or one JSON object; anything else is reported as an internal error
in one line, never as a traceback.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TypeVar

import click

from agent_cli.output import CliError, ExitCode, Output
from agent_cli.settings import CliSettings
from agent_cli.store import Store, StoreError
from agent_cli.urls import UrlError

T = TypeVar("T")


@dataclass
class Context:
    """What the group's options decided, handed to each command."""

    output: Output
    settings: CliSettings
    server: str | None = None
    store: Store = field(init=False)

    def __post_init__(self) -> None:
        self.store = Store(self.settings.credentials_dir())


def run(output: Output, make: Callable[[], Awaitable[T]]) -> T:
    """Run ``make()`` to completion; exit with the error's code when it fails."""
    try:
        return asyncio.run(_converted(make))
    except CliError as error:
        output.error(error)
        raise click.exceptions.Exit(error.code) from None
    except (KeyboardInterrupt, click.exceptions.Abort):
        output.error(CliError("interrupted", ExitCode.INTERRUPTED))
        raise click.exceptions.Exit(ExitCode.INTERRUPTED) from None
    except Exception as exc:  # the promise: a line, never a traceback
        output.error(CliError(f"internal error: {type(exc).__name__}: {exc}", ExitCode.ERROR))
        raise click.exceptions.Exit(ExitCode.ERROR) from None


async def _converted(make: Callable[[], Awaitable[T]]) -> T:
    try:
        return await make()
    except StoreError as exc:
        raise CliError(str(exc), ExitCode.CONFIG) from None
    except UrlError as exc:
        raise CliError(str(exc), ExitCode.USAGE) from None
    except OSError as exc:
        raise CliError(f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": "),
                       ExitCode.CONFIG) from None  # fmt: skip
