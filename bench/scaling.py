"""How a list's cost grows with the data: ``bench/tracking.py --workloads scaling``.

The table grows in steps (``--scaling-sizes``, 10,000, 100,000 and 1,000,000 artifact
versions by default, over ``--version-artifacts`` artifacts); at each step, one keep-alive
connection sends two lists for a few seconds and their p50/p95 are kept:

    plain     GET /api/v1/artifact_versions?size=50&sort_by=created   (the project's first page)
    filtered  the versions workload's list: one artifact, ModelArtifact, version_number
              >= half of that artifact's versions, newest first, size=50

Through its batch endpoint the reference on MariaDB takes 40-70 versions a second on 2
shared cores (100,000 would take half an hour), ours ~500. So each server is loaded through
its batch endpoint for the first ``--api-versions`` (5,000) and copied into by SQL from
there, the versions workload's 100,000 too: :func:`copy_versions` (ours: one ``INSERT ...
SELECT`` over ``generate_series`` per chunk, straight into tracking's PostgreSQL) and
``bench.mariadb.copy_versions`` (the reference: the same over MariaDB's sequence engine).
The rows equal those the endpoint writes for the same requests: for these bodies (no tags,
metadata or visualizations) both endpoints write one artifact-version row per version and
nothing else (checked by counting every table's rows before and after an API load), and
the copies take every other column from the first row the API wrote. The reference is
measured up to ``--reference-scaling-max`` only; ``--api-versions`` as large as the sizes
loads everything through the API.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass

import asyncpg

DEFAULT_SIZES = (10_000, 100_000, 1_000_000)
LISTS = ("plain", "filtered")
COPY_CHUNK = 250_000  # rows per INSERT ... SELECT: progress to print, and bounded WAL bursts
SUFFIXES = {"k": 1_000, "m": 1_000_000}


def sizes(text: str) -> list[int]:
    """``10k,100k,1M`` or plain numbers, ascending (an argparse type)."""
    found = []
    for part in (p.strip().lower() for p in text.split(",")):
        if not part:
            continue
        factor = SUFFIXES.get(part[-1], 1)
        digits = part[:-1] if part[-1] in SUFFIXES else part
        try:
            value = int(digits) * factor
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number of versions: {part!r}") from None
        if value < 1:
            raise argparse.ArgumentTypeError(f"must be at least 1: {part!r}")
        found.append(value)
    if not found:
        raise argparse.ArgumentTypeError("no sizes given")
    return sorted(set(found))


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--scaling-sizes",
        type=sizes,
        default=list(DEFAULT_SIZES),
        help="artifact versions at each step of the scaling workload (default: 10k,100k,1M)",
    )
    parser.add_argument(
        "--reference-scaling-max",
        type=int,
        default=100_000,
        help="the reference's last step in the scaling workload, where its lists already "
        "take a large share of a second (default: %(default)s)",
    )
    parser.add_argument(
        "--api-versions",
        type=int,
        default=5_000,
        help="versions loaded through the batch endpoint; any beyond are copied in by SQL "
        "(both servers, the versions workload too; at least --batch) (default: %(default)s)",
    )


@dataclass(frozen=True)
class Point:
    """One list measured at one size on one server (latencies in ms)."""

    target: str
    size: int
    listing: str
    p50_ms: float
    p95_ms: float
    requests: int
    errors: int = 0


@dataclass(frozen=True)
class Load:
    """How a server grew by ``added`` versions to ``size``: through the API or by SQL, in
    how long."""

    target: str
    size: int
    added: int
    how: str
    seconds: float


COPY = """
WITH template AS (
    SELECT project_id, materializer, data_type, save_type, artifact_store_id,
           content_hash, item_count, user_id
    FROM artifact_versions WHERE uri = '/bench/0'
), latest AS (
    SELECT max(created) AS created FROM artifact_versions
)
INSERT INTO artifact_versions (id, project_id, artifact_id, version, version_number, type,
    uri, materializer, data_type, save_type, artifact_store_id, content_hash, item_count,
    user_id, created, updated)
SELECT gen_random_uuid(), t.project_id, a.id, (i / $3 + 1)::text, i / $3 + 1,
       CASE WHEN (i / $3 + 1) % 2 = 0 THEN 'DataArtifact' ELSE 'ModelArtifact' END,
       '/bench/' || i, t.materializer, t.data_type, t.save_type, t.artifact_store_id,
       t.content_hash, t.item_count, t.user_id,
       l.created + (i - $1 + 1) * interval '1 microsecond',
       l.created + (i - $1 + 1) * interval '1 microsecond'
FROM generate_series($1::bigint, $2::bigint - 1) AS i
CROSS JOIN template AS t
CROSS JOIN latest AS l
JOIN artifacts AS a ON a.project_id = t.project_id AND a.name = 'bench-v-' || (i % $3)
"""


async def copy_versions(url: str, start: int, stop: int, artifacts: int) -> None:
    """Versions ``start`` to ``stop - 1`` of the load, as ``tracking.version_body`` numbers,
    types and names them, written straight into the database at ``url``; the rest of each
    row copied from the first version the API wrote (``/bench/0``), times after the newest.
    Then ``VACUUM (ANALYZE)``, which autovacuum runs soon after as many inserts anyway: its
    visibility map lets counts read the index alone (at 1,000,000 versions, the filtered
    count took 3.6 ms over 2,500 heap pages without it, 0.6 ms with it)."""
    connection = await asyncpg.connect(url)
    try:
        for begin in range(start, stop, COPY_CHUNK):
            end = min(begin + COPY_CHUNK, stop)
            status = await connection.execute(COPY, begin, end, artifacts)
            if status != f"INSERT 0 {end - begin}":
                raise RuntimeError(f"copying versions {begin}-{end}: {status}")
        await connection.execute("VACUUM (ANALYZE) artifact_versions")
    finally:
        await connection.close()


def format_table(points: Sequence[Point], loads: Sequence[Load]) -> str:
    """versions -> each server's p50/p95 of each list; how each step was loaded below."""
    targets = list(dict.fromkeys(p.target for p in points))
    header = ["versions"]
    for target in targets:
        short = "ref" if target == "reference" else target
        header += [f"{short} {listing} p50/p95 ms" for listing in LISTS]
    found = {(p.target, p.size, p.listing): p for p in points}
    body = []
    for size in sorted({p.size for p in points}):
        cells = [f"{size:,}"]
        for target in targets:
            for listing in LISTS:
                point = found.get((target, size, listing))
                cells.append(
                    "-"
                    if point is None
                    else f"{point.p50_ms:.1f} / {point.p95_ms:.1f}"
                    + (f" ({point.errors} errors)" if point.errors else "")
                )
        body.append(cells)
    widths = [max(len(line[i]) for line in [header, *body]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        return "  ".join(
            [cells[0].rjust(widths[0])] + [cells[i].rjust(widths[i]) for i in range(1, len(cells))]
        ).rstrip()

    out = [line(header), "  ".join("-" * w for w in widths), *map(line, body)]
    if loads:
        out += ["", "loaded:"]
        out += [
            f"  {load.target} to {load.size:,}: {load.how}, {load.seconds:.1f}s"
            + (f" ({load.added / load.seconds:,.0f} versions/s)" if load.seconds else "")
            for load in loads
        ]
    return "\n".join(out)
