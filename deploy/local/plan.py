"""Which of the stack's processes one run of the launcher starts: those whose module can
run (the issuer first), the rest skipped with the reason."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field

from deploy.config import Service
from deploy.local.datadir import SetupError
from deploy.local.options import Options

__all__ = ["Plan", "module_problem", "plan_processes"]


@dataclass
class Plan:
    """The processes one run starts; entries whose module is missing are skipped."""

    web: list[Service] = field(default_factory=list)
    workers: list[Service] = field(default_factory=list)
    skipped: list[tuple[Service, str]] = field(default_factory=list)

    def process_names(self) -> list[str]:
        """Every process the services and workers run as (a name per replica)."""
        return [name for s in [*self.web, *self.workers] for name in s.replica_names()]


def module_problem(module: str) -> str | None:
    """Why ``python -m module`` cannot run yet, or ``None`` if it can."""
    try:
        spec = importlib.util.find_spec(module)
        if spec is not None and spec.submodule_search_locations is not None:
            # A package runs through its __main__ module.
            spec = importlib.util.find_spec(f"{module}.__main__")
    except ModuleNotFoundError:
        spec = None
    except Exception:  # the module exists but fails to import: let it run
        return None  # and show its own traceback in its log, which says more than we can
    return None if spec is not None else f"module {module} (or its __main__) does not exist yet"


def plan_processes(options: Options) -> Plan:
    """Split the stack into what can run now (issuer first) and what is skipped."""
    plan = Plan()
    for service in options.stack.services:
        problem = module_problem(service.module)
        if problem is not None:
            if service.issuer:
                raise SetupError(f"{service.name} issues every token and cannot run: {problem}")
            plan.skipped.append((service, problem))
        elif service.kind == "web":
            plan.web.append(service)
        else:
            plan.workers.append(service)
    plan.web.sort(key=lambda s: not s.issuer)
    return plan
