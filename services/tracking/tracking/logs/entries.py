"""Reading logs the client wrote into an artifact store: one JSON ``LogEntry`` a line (the
reference's artifact log store), or plain text from older clients."""

from __future__ import annotations

import datetime as dt
import re
import uuid

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tracking.store.base import ArtifactStore

MAX_ENTRIES = 50_000
"""The most entries one request answers (the reference's default)."""
MAX_LINE = 1024**2
"""A longer line is cut there: the reader never holds more than this of one line."""
INFO = 20
_OLD_FORMAT = re.compile(r"^\[(\d{4}-\d{2}-\d{2}\s+\d{2}:\d{2}:\d{2})\s+UTC\]")


class LogEntry(BaseModel):
    """One entry, in the reference's fields (``level`` is Python's logging number)."""

    model_config = ConfigDict(extra="ignore")

    message: str
    name: str | None = None
    level: int | None = None
    timestamp: dt.datetime | None = None
    module: str | None = None
    filename: str | None = None
    lineno: int | None = None
    chunk_index: int = 0
    total_chunks: int = 1
    id: uuid.UUID = Field(default_factory=uuid.uuid4)


def parse_line(line: str) -> LogEntry | None:
    """An entry from one line (``None`` for a blank one): JSON when it is, else the text
    at INFO level, with the timestamp of the old ``[YYYY-MM-DD HH:MM:SS UTC]`` prefix."""
    line = line.strip()
    if not line:
        return None
    if line.startswith("{") and line.endswith("}"):
        try:
            return LogEntry.model_validate_json(line)
        except ValidationError:
            pass
    timestamp = None
    old = _OLD_FORMAT.search(line)
    if old is not None:
        timestamp = dt.datetime.fromisoformat(old.group(1)).replace(tzinfo=dt.UTC)
        line = line.replace(old.group(0), "").strip()
    return LogEntry(message=line, level=INFO, timestamp=timestamp)


async def read_entries(store: ArtifactStore, uri: str, limit: int = MAX_ENTRIES) -> list[LogEntry]:
    """The entries of the file at ``uri``, or of the files under it in name order (none
    when nothing is there), at most ``limit``, read piece by piece."""
    entries: list[LogEntry] = []
    async for member in store.walk(uri):
        if member.is_dir:
            continue
        pending = b""
        async for piece in store.chunks(member):
            *lines, pending = (pending + piece).split(b"\n")
            pending = pending[:MAX_LINE]
            for line in lines:
                entry = parse_line(line[:MAX_LINE].decode("utf-8", errors="replace"))
                if entry is not None:
                    entries.append(entry)
                    if len(entries) >= limit:
                        return entries
        last = parse_line(pending.decode("utf-8", errors="replace"))
        if last is not None:
            entries.append(last)
            if len(entries) >= limit:
                return entries
    return entries
