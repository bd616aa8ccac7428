"""Write (or ``--check``) the committed compose gateway config: ``python -m deploy.gateway``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from deploy.config import DEFAULT_STACK_FILE, StackConfigError, load_stack
from deploy.gateway.render import compose_target, render

COMPOSE_CONF = Path(__file__).resolve().parent / "nginx.compose.conf"


def main(argv: list[str] | None = None) -> int:
    """Regenerate ``nginx.compose.conf`` from the stack file; ``--check`` only compares."""
    parser = argparse.ArgumentParser(prog="python -m deploy.gateway", description=__doc__)
    parser.add_argument("--stack", type=Path, default=DEFAULT_STACK_FILE)
    parser.add_argument("--output", type=Path, default=COMPOSE_CONF)
    parser.add_argument("--check", action="store_true", help="exit 1 if the file is stale")
    args = parser.parse_args(argv)
    try:
        stack = load_stack(args.stack)
    except StackConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    text = render(stack, compose_target(stack))
    current = args.output.read_text(encoding="utf-8") if args.output.exists() else None
    if args.check:
        if current != text:
            print(f"{args.output} is stale; run `python -m deploy.gateway`", file=sys.stderr)
            return 1
        return 0
    if current != text:
        args.output.write_text(text, encoding="utf-8")
        print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
