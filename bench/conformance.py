"""The conformance run by hand (``make conformance``), never in CI: every document of
:mod:`tests.e2e.conformance` whole, against one stack, with a seed of its own and more
examples than the suite's; the failures printed grouped by check.

    make conformance                                      # a new seed, 50 examples
    CONFORMANCE_SEED=20261128 CONFORMANCE_EXAMPLES=10 make conformance

Starts a stack of its own (a temporary data dir, the embedded PostgreSQL) unless
``CONFORMANCE_URL`` names a running one's platform entrypoint (``make run``:
``http://127.0.0.1:8080``; ``CONFORMANCE_AGENT_URL``, default ``http://127.0.0.1:8090``),
logged in as ``default`` with ``CONFORMANCE_PASSWORD`` and ``CONFORMANCE_AGENT_PASSWORD``.
A running stack is changed by the run (the generated requests create, rename and delete):
use a throwaway one. Each document's identity operations run after every other
operation, since they may change the admin's password. Exit status 1 when anything failed.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from tests.e2e.conformance import (
    DOCUMENTS,
    IDENTITY,
    PASSWORD,
    Target,
    logins,
    plan,
    run,
    stack_target,
)
from tests.e2e.conformance.report import Failure, grouped
from tests.support.processes import launch_stack


@contextlib.contextmanager
def target(directory: Path) -> Iterator[Target]:
    """``CONFORMANCE_URL``'s stack, or a stack of its own in ``directory``."""
    url = os.environ.get("CONFORMANCE_URL")
    if url:
        agent = os.environ.get("CONFORMANCE_AGENT_URL", "http://127.0.0.1:8090")
        yield Target(
            {"platform": url.rstrip("/"), "agent": agent.rstrip("/")},
            logins(
                os.environ.get("CONFORMANCE_PASSWORD", ""),
                os.environ.get("CONFORMANCE_AGENT_PASSWORD", ""),
            ),
        )
        return
    print("starting a stack of its own (CONFORMANCE_URL for a running one)", flush=True)
    with launch_stack(
        directory / "data",
        admin_password=PASSWORD,
        extra_env={"SERVER_DEFAULT_ACCOUNT_PASSWORD": PASSWORD},
    ) as stack:
        yield stack_target(stack)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.conformance", description=__doc__)
    seed = os.environ.get("CONFORMANCE_SEED") or str(random.randrange(2**31))
    examples = os.environ.get("CONFORMANCE_EXAMPLES") or "50"
    parser.add_argument("--seed", type=int, default=int(seed))
    parser.add_argument("--examples", type=int, default=int(examples))
    parser.add_argument("--keep", type=Path, help="keep the documents and reports here")
    args = parser.parse_args(argv)
    print(f"seed {args.seed}, at most {args.examples} examples per operation", flush=True)
    found: list[Failure] = []
    with contextlib.ExitStack() as held:
        directory = args.keep or Path(held.enter_context(tempfile.TemporaryDirectory()))
        stack = held.enter_context(target(directory))
        plans = {name: plan(stack, name) for name in DOCUMENTS}
        for identity in (False, True):
            for name, each in plans.items():
                checked = [
                    op for op in each.operations() if (each.owners[op] == IDENTITY) is identity
                ]
                if not checked:
                    continue
                part = f"{name}-identity" if identity else name
                print(f"{part}: {len(checked)} operations", flush=True)
                found += [
                    Failure(f"{name}: {f.operation}", f.check, f.status, f.said)
                    for f in run(
                        stack,
                        each,
                        checked,
                        directory / part,
                        seed=args.seed,
                        examples=args.examples,
                        whole=True,
                    )
                ]
    print(grouped(found) or "no failures")
    print(f"seed {args.seed}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
