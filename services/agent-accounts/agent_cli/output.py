"""What the tools print: text for people (tables, spinners on waits) or JSON for
machines (``--output json``), and errors as one clear line with an exit code."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import sys
from collections.abc import Iterator, Mapping, Sequence
from enum import IntEnum
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text


class ExitCode(IntEnum):
    OK = 0
    ERROR = 1  # the server refused or failed the request
    USAGE = 2  # bad options or arguments (also a server URL the tool will not use)
    AUTH = 3  # not logged in, or the credential was refused
    UNREACHABLE = 4  # the server did not answer
    INTERACTION_REQUIRED = 5  # a prompt or device login without a terminal
    CONFIG = 6  # the stored login cannot be read or written
    INTERRUPTED = 130


class CliError(Exception):
    """An expected failure: printed as one line (text) or an error object (JSON)."""

    def __init__(self, message: str, code: ExitCode = ExitCode.ERROR) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


def _default(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        return value.isoformat()
    return str(value)


class Output:
    """Text or JSON output; results go to stdout, progress and errors to stderr."""

    def __init__(self, *, json_mode: bool, interactive: bool | None = None) -> None:
        self.json = json_mode
        # No markup: URLs like http://[::1]:8000 and server messages are printed as is.
        self.out = Console(soft_wrap=True, highlight=False, markup=False)
        self.err = Console(stderr=True, soft_wrap=True, highlight=False, markup=False)
        self.interactive = sys.stdin.isatty() if interactive is None else interactive

    def emit_json(self, value: Any) -> None:
        sys.stdout.write(json.dumps(value, default=_default) + "\n")
        sys.stdout.flush()

    def result(self, data: Mapping[str, Any], *, title: str | None = None) -> None:
        """A single object: JSON, or a two-column table of its fields."""
        if self.json:
            self.emit_json(dict(data))
            return
        table = Table(title=title, show_header=False, box=None, pad_edge=False)
        table.add_column(style="bold")
        table.add_column()
        for key, value in data.items():
            table.add_row(key.replace("_", " "), _cell(value))
        self.out.print(table)

    def table(
        self, columns: Sequence[str], rows: Sequence[Mapping[str, Any]], *, title: str = ""
    ) -> None:
        """Rows: a JSON list of objects, or a table with one column per key."""
        if self.json:
            self.emit_json([dict(row) for row in rows])
            return
        table = Table(title=title or None)
        for column in columns:
            table.add_column(column.replace("_", " "))
        for row in rows:
            table.add_row(*(_cell(row.get(column)) for column in columns))
        self.out.print(table)

    def message(self, text: str) -> None:
        """A line for people (nothing in JSON mode, where the result says it)."""
        if not self.json:
            self.out.print(text)

    def event(self, event: str, text: str, /, **fields: Any) -> None:
        """A progress event of a long-running command: a JSON line, or a text line."""
        if self.json:
            self.emit_json({"event": event, **fields})
        else:
            self.err.print(text)

    @contextlib.contextmanager
    def waiting(self, text: str) -> Iterator[None]:
        """A spinner on stderr while waiting (only on a terminal, never in JSON mode)."""
        if self.json or not self.err.is_terminal:
            yield
            return
        with self.err.status(text):
            yield

    def error(self, error: CliError) -> None:
        if self.json:
            body = {"ok": False, "error": {"message": error.message, "code": error.code.name}}
            sys.stderr.write(json.dumps(body) + "\n")
            sys.stderr.flush()
        else:
            self.err.print(Text.assemble(("Error: ", "bold red"), error.message))


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dt.datetime):
        return value.isoformat(timespec="seconds")
    if isinstance(value, list | dict):
        return json.dumps(value, default=_default)
    return str(value)
