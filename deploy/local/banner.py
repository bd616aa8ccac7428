"""The launcher's report once the stack is up (:func:`banner`)."""

from __future__ import annotations

from collections.abc import Mapping

from deploy.config import Entrypoint, Service
from deploy.local import gateway, postgres
from deploy.local.environment import own_database_variable, passthrough_value, pgdata, public_url
from deploy.local.options import Options
from deploy.local.plan import Plan

__all__ = ["banner"]


def banner(options: Options, plan: Plan, environ: Mapping[str, str], fresh: set[str]) -> list[str]:
    """What the launcher prints once the stack is up: each entrypoint and UI, how to log
    in, the data dir, the database, metrics ports, replicas and what is not running yet."""
    entrypoints = options.stack.entrypoints
    width = max(len(e.title) for e in entrypoints)
    lines = ["the stack is up:"]
    for entrypoint in entrypoints:
        url = public_url(options, entrypoint.name)
        line = f"  {entrypoint.title.ljust(width)}  {url}"
        if (options.data_dir / "gateway" / "docs" / entrypoint.name).is_dir():
            line += f"  (API docs: {url}/docs)"
        lines.append(line)
    titles = gateway.ui_titles()
    for name in gateway.served_uis(options):
        title = titles.get(name, f"{name} web UI")
        lines.append(f"  {title.ljust(width)}  {public_url(options, name)}/")
    for entrypoint in entrypoints:
        lines += _login_lines(options, entrypoint, environ, fresh)
    lines.append(f"  data: {options.data_dir}")
    lines.append(f"  database: {_database_line(options, environ)}")
    metrics = [
        f"{name} :{options.ports.metrics[name]}"
        for s in [*plan.web, *plan.workers]
        for name in s.replica_names()
        if name in options.ports.metrics
    ]
    if metrics:
        lines.append(f"  metrics (/metrics, not through the gateway): {', '.join(metrics)}")
    replicated = [_replicas_text(options, s) for s in [*plan.web, *plan.workers] if s.replicas > 1]
    if replicated:
        lines.append(f"  replicas: {'; '.join(replicated)}")
    if plan.skipped:
        lines.append(f"  not running yet: {', '.join(s.name for s, _ in plan.skipped)}")
    lines.append("Ctrl-C stops everything.")
    return lines


def _replicas_text(options: Options, service: Service) -> str:
    """``tracking#1-#3 on ports 8102, 8202, 8302`` (a worker's without ports)."""
    text = f"{service.name}#1-#{service.replicas}"
    names = service.replica_names()
    if service.kind == "web":
        text += f" on ports {', '.join(str(options.ports.processes[n]) for n in names)}"
    return text


def _database_line(options: Options, environ: Mapping[str, str]) -> str:
    """Which PostgreSQL the services use."""
    web = options.stack.web_services
    own = [s.name for s in web if environ.get(own_database_variable(s.name))]
    parts = []
    if options.database_url is not None and len(own) < len(web):
        parts.append(f"PostgreSQL at {postgres.hide_password(options.database_url)}")
    elif len(own) < len(web):
        parts.append(
            f"the embedded PostgreSQL at {postgres.server_url(options.ports.postgres)} "
            f"(data in {pgdata(options)})"
        )
    if own:
        parts.append(f"{', '.join(own)} on the database <SERVICE>_DATABASE_URL names")
    return "; ".join(parts)


def _login_lines(
    options: Options, entrypoint: Entrypoint, environ: Mapping[str, str], fresh: set[str]
) -> list[str]:
    """How to log in to ``entrypoint`` and where the first password comes from."""
    login = entrypoint.login
    if login is None:
        return []
    service = options.stack.service(login.service)
    # Named as the service's own documentation does (the launcher takes both names).
    variable = f"{service.env_prefix}{login.password_variable}"
    if passthrough_value(
        (service.env_prefix, *service.env_aliases), login.password_variable, environ
    ):
        source = f"from {variable} (used when the account is first created)"
    elif service.name in fresh:
        source = f"printed once in {service.name}'s log above"
    else:
        source = (
            f"printed in {service.name}'s log at the first start with {options.data_dir} "
            f"(set {variable} before a first start to choose it)"
        )
    command = login.command.replace("{url}", public_url(options, entrypoint.name))
    return [
        f'  {entrypoint.title} login: user "{login.user}", password {source}',
        f"    {command}",
    ]
