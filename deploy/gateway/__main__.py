"""Write (or ``--check``) the committed gateway configs: ``python -m deploy.gateway``.

Two files come from ``deploy/stack.toml``: docker-compose's ``nginx.compose.conf`` and the
Kubernetes base's ``deploy/k8s/base/gateway/nginx.conf`` (which its kustomization turns into
the gateway's ConfigMap), so the route table is the same everywhere.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from deploy.config import DEFAULT_STACK_FILE, Stack, StackConfigError, load_stack
from deploy.gateway.render import Target, compose_target, kubernetes_target, render

COMPOSE_CONF = Path(__file__).resolve().parent / "nginx.compose.conf"
KUBERNETES_CONF = Path(__file__).resolve().parents[1] / "k8s" / "base" / "gateway" / "nginx.conf"
# Each committed file and the target it is rendered for.
OUTPUTS: tuple[tuple[Path, Callable[[Stack], Target]], ...] = (
    (COMPOSE_CONF, compose_target),
    (KUBERNETES_CONF, kubernetes_target),
)


def main(argv: list[str] | None = None) -> int:
    """Regenerate every committed config from the stack file; ``--check`` only compares."""
    parser = argparse.ArgumentParser(prog="python -m deploy.gateway", description=__doc__)
    parser.add_argument("--stack", type=Path, default=DEFAULT_STACK_FILE)
    parser.add_argument("--check", action="store_true", help="exit 1 if a file is stale")
    args = parser.parse_args(argv)
    try:
        stack = load_stack(args.stack)
    except StackConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    stale = []
    for output, target in OUTPUTS:
        text = render(stack, target(stack))
        current = output.read_text(encoding="utf-8") if output.exists() else None
        if current == text:
            continue
        if args.check:
            stale.append(output)
        else:
            output.parent.mkdir(parents=True, exist_ok=True)
            output.write_text(text, encoding="utf-8")
            print(f"wrote {output}")
    for output in stale:
        print(f"{output} is stale; run `python -m deploy.gateway`", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
