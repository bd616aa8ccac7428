"""The real ZenML 0.96.3 packages from PyPI, in cached virtual environments of their own.

Two environments live in the user's cache (:data:`CACHE_ROOT`: ``$PLATFORM_CACHE_DIR``, else
``$XDG_CACHE_HOME/platform``, else ``~/.cache/platform``), shared by every clone of the
repository on the machine, as pip's and uv's caches are (a new clone's suite does not spend a
minute installing the same pinned packages again):

- ``zenml-client-0.96.3/``: the unmodified client (plain ``zenml``), which the compatibility
  tests drive against our stack and against the reference server;
- ``zenml-server-0.96.3/``: ``zenml[server]``, the reference server itself (only for
  ``COMPAT_REFERENCE=1`` and ``bench/tracking.py``).

Each is created once with ``python -m venv`` and its own pip. Creation is atomic and safe for
concurrent pytest processes: the environment is built in a temporary directory beside its final
place, under an exclusive file lock, then renamed into place with a marker file that records
success (and how long the install took). A directory without the marker is never used.

Only ``<venv>/bin/python -m ...`` is ever run from these environments (the console scripts'
shebangs are rewritten after the rename, but nothing here relies on them).

Nothing here touches the user's ZenML configuration: :func:`client_environment` builds a clean
environment with ``ZENML_CONFIG_PATH`` (and ``HOME``) in a directory the caller owns, analytics
off and every non-loopback HTTP request sent to a closed port, so the client stays offline.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

ZENML_VERSION = "0.96.3"
# The zenml client the compat tests drive: 0.96.3 (the reference's version) unless
# COMPAT_ZENML_CLIENT names another release (`make compat-clients` runs the oldest and
# newest 0.96 patch releases). The reference server stays at ZENML_VERSION.
CLIENT_VERSION = os.environ.get("COMPAT_ZENML_CLIENT") or ZENML_VERSION
REPO_ROOT = Path(__file__).resolve().parents[2]


def _cache_root() -> Path:
    explicit = os.environ.get("PLATFORM_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "platform"


CACHE_ROOT = _cache_root()
MARKER = "zenml-env.json"
RESULT_PREFIX = "@@zenml-env-result@@ "
LOCK_TIMEOUT = 900.0
INSTALL_TIMEOUT = 900.0
# A closed port: any request the client would make beyond loopback fails at once.
OFFLINE_PROXY = "http://127.0.0.1:9"


class ZenmlEnvError(RuntimeError):
    """An environment could not be created, or a snippet or server failed; one-line message."""


@dataclass(frozen=True)
class ZenmlVenv:
    """A ready virtual environment holding one ZenML distribution."""

    path: Path
    requirement: str
    install_seconds: float
    installed_now: bool

    @property
    def python(self) -> Path:
        return self.path / "bin" / "python"


# ---------------------------------------------------------------------------------------------
# Creating the environments


def client_venv(cache_root: Path = CACHE_ROOT) -> ZenmlVenv:
    """The cached environment with the plain ``zenml`` client (:data:`CLIENT_VERSION`);
    created on first use."""
    return ensure_venv(f"zenml-client-{CLIENT_VERSION}", f"zenml=={CLIENT_VERSION}", cache_root)


def server_venv(cache_root: Path = CACHE_ROOT) -> ZenmlVenv:
    """The cached environment with ``zenml[server]`` (the reference server); created on first
    use."""
    return ensure_venv(
        f"zenml-server-{ZENML_VERSION}", f"zenml[server]=={ZENML_VERSION}", cache_root
    )


def ensure_venv(name: str, requirement: str, cache_root: Path = CACHE_ROOT) -> ZenmlVenv:
    """Return the environment ``cache_root/name`` holding ``requirement``, building it if needed.

    Raises :class:`ZenmlEnvError` (one line, pointing at the install log) if it cannot be built.
    """
    cache_root.mkdir(parents=True, exist_ok=True)
    final = cache_root / name
    ready = _ready(final, requirement)
    if ready is not None:
        return ready
    with _exclusive_lock(cache_root / f"{name}.lock"):
        ready = _ready(final, requirement)  # another process may have built it meanwhile
        if ready is not None:
            return ready
        return _build(final, requirement)


def _ready(path: Path, requirement: str) -> ZenmlVenv | None:
    """The environment at ``path`` if it was completed for ``requirement`` and still runs."""
    try:
        marker = json.loads((path / MARKER).read_text())
    except (OSError, ValueError):
        return None
    # A dangling bin/python means its base interpreter is gone (e.g. pyenv upgraded).
    if marker.get("requirement") != requirement or not (path / "bin" / "python").exists():
        return None
    return ZenmlVenv(path, requirement, float(marker.get("install_seconds", 0.0)), False)


@contextlib.contextmanager
def _exclusive_lock(lock_path: Path, timeout: float = LOCK_TIMEOUT) -> Iterator[None]:
    with lock_path.open("a") as handle:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise ZenmlEnvError(
                        f"waited {timeout:.0f}s for {lock_path} (another install still running?)"
                    ) from None
                time.sleep(0.5)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _build(final: Path, requirement: str) -> ZenmlVenv:
    """Build under the lock: temp dir beside ``final``, install, marker, rename."""
    parent, name = final.parent, final.name
    for stale in parent.glob(f".{name}.*.tmp"):  # left by a build that was killed
        shutil.rmtree(stale, ignore_errors=True)
    log = parent / f"{name}.install.log"
    build = Path(tempfile.mkdtemp(prefix=f".{name}.", suffix=".tmp", dir=parent))
    build.chmod(0o755)  # mkdtemp makes it private; a venv is normally world-readable
    started = time.monotonic()
    try:
        with log.open("w") as output:
            _run_logged([sys.executable, "-m", "venv", str(build)], output, f"create {name}", log)
            pip = [str(build / "bin" / "python"), "-m", "pip"]
            _run_logged(
                [*pip, "install", "--disable-pip-version-check", "--no-input", requirement],
                output,
                f"pip install {requirement}",
                log,
            )
        seconds = round(time.monotonic() - started, 1)
        marker = {"requirement": requirement, "install_seconds": seconds, "created": time.time()}
        (build / MARKER).write_text(json.dumps(marker) + "\n")
        if final.exists():  # an incomplete or outdated environment: move it out of the way
            trash = Path(tempfile.mkdtemp(prefix=f".{name}.", suffix=".tmp", dir=parent))
            final.rename(trash / "old")
            shutil.rmtree(trash, ignore_errors=True)
        build.rename(final)
    except BaseException:
        shutil.rmtree(build, ignore_errors=True)
        raise
    _relocate_scripts(final, build)
    return ZenmlVenv(final, requirement, seconds, True)


def _run_logged(argv: list[str], output: Any, what: str, log: Path) -> None:
    try:
        done = subprocess.run(
            argv,
            stdout=output,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            timeout=INSTALL_TIMEOUT,
            check=False,
            env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PYTHONNOUSERSITE": "1"},
        )
    except subprocess.TimeoutExpired:
        raise ZenmlEnvError(f"{what} took more than {INSTALL_TIMEOUT:.0f}s; log: {log}") from None
    except OSError as exc:
        raise ZenmlEnvError(f"{what} could not run: {exc}") from None
    if done.returncode != 0:
        output.flush()
        raise ZenmlEnvError(
            f"{what} failed (exit {done.returncode}): {_last_error_line(log)}; log: {log}"
        )


def _last_error_line(log: Path) -> str:
    lines = [line.strip() for line in log.read_text(errors="replace").splitlines()]
    errors = [line for line in lines if line.startswith("ERROR")]
    picked = errors[-1] if errors else next((line for line in reversed(lines) if line), "")
    return picked[:300] or "no output"


def _relocate_scripts(final: Path, build: Path) -> None:
    """Point console-script shebangs and activate scripts at the final path (cosmetic)."""
    old, new = str(build).encode(), str(final).encode()
    for script in (final / "bin").iterdir():
        if script.is_symlink() or not script.is_file():
            continue
        with contextlib.suppress(OSError):
            content = script.read_bytes()
            if old in content:
                script.write_bytes(content.replace(old, new))


def installed_versions(python: Path, *names: str) -> dict[str, str | None]:
    """The installed version of each distribution in ``names`` for the interpreter ``python``
    (``None`` when absent); a cheap probe, nothing is imported."""
    code = (
        "import importlib.metadata as m, json, sys\n"
        "def v(n):\n"
        "    try:\n"
        "        return m.version(n)\n"
        "    except m.PackageNotFoundError:\n"
        "        return None\n"
        "print(json.dumps({n: v(n) for n in sys.argv[1:]}))"
    )
    try:
        done = subprocess.run(
            [str(python), "-c", code, *names],
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
        found: dict[str, str | None] = json.loads(done.stdout)
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return dict.fromkeys(names)
    return found


# ---------------------------------------------------------------------------------------------
# Running the client


def client_environment(
    *,
    store_url: str,
    username: str,
    password: str,
    config_dir: Path,
    verbosity: str = "WARN",
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """A clean environment for the zenml client: its config under ``config_dir``, offline, quiet.

    Nothing is inherited from this process but ``PATH`` and the locale, so a developer's own
    ``ZENML_*`` variables or config never leak in.
    """
    home = config_dir / "home"
    home.mkdir(parents=True, exist_ok=True)
    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "LANG": os.environ.get("LANG", "C.UTF-8"),
        "HOME": str(home),
        "TMPDIR": str(config_dir),
        "PYTHONUNBUFFERED": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONNOUSERSITE": "1",
        "ZENML_CONFIG_PATH": str(config_dir / "zenml"),
        "ZENML_ANALYTICS_OPT_IN": "false",
        "ZENML_STORE_URL": store_url,
        "ZENML_STORE_USERNAME": username,
        "ZENML_STORE_PASSWORD": password,
        "ZENML_LOGGING_VERBOSITY": verbosity,
        "ZENML_LOGGING_COLORS_DISABLED": "true",
        "ZENML_ENABLE_RICH_TRACEBACK": "false",
        "ZENML_DISABLE_INTERACTIVE_INPUT": "true",
        "ZENML_AUTO_OPEN_DASHBOARD": "false",
        "ZENML_DEBUG": "false",
        # Offline: loopback goes direct, anything else to a closed port.
        "HTTP_PROXY": OFFLINE_PROXY,
        "HTTPS_PROXY": OFFLINE_PROXY,
        "http_proxy": OFFLINE_PROXY,
        "https_proxy": OFFLINE_PROXY,
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
    }
    env.update(extra or {})
    return env


@dataclass
class SnippetResult:
    """What a snippet run produced: its JSON value, plus the raw output for messages."""

    value: Any
    returncode: int
    stdout: str
    stderr: str

    def output_tail(self, lines: int = 30) -> str:
        text = (self.stdout + "\n" + self.stderr).strip().splitlines()
        return "\n".join(text[-lines:])


SNIPPET_PRELUDE = f"""\
import json as _zenml_env_json

def emit(value):
    \"\"\"Report ``value`` (JSON-serialisable; other objects via str) to the test.\"\"\"
    print({RESULT_PREFIX!r} + _zenml_env_json.dumps(value, default=str), flush=True)

""" + Path(__file__).with_name("zenml_cli.py").read_text()
"""The prelude of every snippet: ``emit`` and ``zenml(*args)`` (:mod:`tests.support.zenml_cli`,
which runs in the client's interpreter, not the tests')."""


def run_snippet(
    python: Path,
    code: str,
    *,
    env: Mapping[str, str],
    cwd: Path,
    timeout: float = 300.0,
    filename: str = "snippet.py",
) -> SnippetResult:
    """Run ``code`` with ``python`` (as the file ``cwd/filename``) and return what it emitted.

    The snippet reports its result with ``emit(value)`` (defined by a prelude); the last value
    emitted is returned. A snippet that printed one JSON document as its last stdout line
    works too. Raises :class:`ZenmlEnvError` when it emitted nothing or timed out; a non-zero
    exit with an emitted value is returned (``returncode``) for the caller to judge.
    """
    script = cwd / filename
    script.write_text(SNIPPET_PRELUDE + code)
    try:
        done = subprocess.run(
            [str(python), str(script)],
            cwd=cwd,
            env=dict(env),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else ""
        raise ZenmlEnvError(f"{filename} ran longer than {timeout:.0f}s; output:\n{out}") from None
    result = SnippetResult(None, done.returncode, done.stdout, done.stderr)
    found, value = _parse_result(done.stdout)
    if not found:
        raise ZenmlEnvError(
            f"{filename} exited {done.returncode} without a JSON result; output:\n"
            + result.output_tail()
        )
    result.value = value
    return result


def _parse_result(stdout: str) -> tuple[bool, Any]:
    lines = stdout.splitlines()
    for line in reversed(lines):
        if line.startswith(RESULT_PREFIX):
            return True, json.loads(line[len(RESULT_PREFIX) :])
    for line in reversed(lines):
        if line.strip():
            try:
                return True, json.loads(line)
            except ValueError:
                return False, None
    return False, None


# ---------------------------------------------------------------------------------------------
# The reference server


@dataclass
class ReferenceServer:
    """A running ZenML 0.96.3 server (uvicorn on 127.0.0.1, SQLite)."""

    process: subprocess.Popen[bytes]
    port: int
    data_dir: Path
    log: Path
    username: str
    password: str
    env: dict[str, str] = field(repr=False)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


def reference_server_environment(
    data_dir: Path, *, username: str, password: str, store_url: str | None = None
) -> dict[str, str]:
    """The environment the reference server runs with: everything under ``data_dir``, its
    database too unless ``store_url`` names one (``mysql://user:password@host:port/db``,
    which ZenML reaches through PyMySQL, a dependency of ``zenml`` itself).

    These are the variables ZenML's own local/docker deployments set (``ZENML_SERVER``,
    ``ZENML_SERVER_AUTO_ACTIVATE``, which creates the default user from
    ``ZENML_DEFAULT_USER_NAME``/``_PASSWORD`` on the first start), with the password auth
    scheme instead of NO_AUTH.
    """
    home = data_dir / "home"
    home.mkdir(parents=True, exist_ok=True)
    return {
        "PATH": os.environ.get("PATH", os.defpath),
        "LANG": os.environ.get("LANG", "C.UTF-8"),
        "HOME": str(home),
        "TMPDIR": str(data_dir),
        "PYTHONUNBUFFERED": "1",
        "PYTHONNOUSERSITE": "1",
        "ZENML_SERVER": "true",
        "ZENML_CONFIG_PATH": str(data_dir / "config"),
        "ZENML_LOCAL_STORES_PATH": str(data_dir / "local_stores"),
        "ZENML_STORE_URL": store_url or f"sqlite:///{data_dir / 'zenml.db'}",
        "ZENML_SERVER_DEPLOYMENT_TYPE": "other",
        "ZENML_SERVER_AUTH_SCHEME": "OAUTH2_PASSWORD_BEARER",
        "ZENML_SERVER_AUTO_ACTIVATE": "true",
        "ZENML_SERVER_JWT_SECRET_KEY": secrets.token_hex(32),
        "ZENML_DEFAULT_USER_NAME": username,
        "ZENML_DEFAULT_USER_PASSWORD": password,
        "ZENML_ANALYTICS_OPT_IN": "false",
        "ZENML_LOGGING_COLORS_DISABLED": "true",
        "ZENML_ENABLE_RICH_TRACEBACK": "false",
        "HTTP_PROXY": OFFLINE_PROXY,
        "HTTPS_PROXY": OFFLINE_PROXY,
        "NO_PROXY": "127.0.0.1,localhost",
    }


@contextlib.contextmanager
def reference_server(
    python: Path,
    data_dir: Path,
    *,
    port: int,
    username: str = "default",
    password: str,
    start_timeout: float = 120.0,
    access_log: bool = True,
    store_url: str | None = None,
) -> Iterator[ReferenceServer]:
    """Start ``uvicorn zenml.zen_server.zen_server_api:app`` on ``127.0.0.1:port``; stop it on
    exit (SIGTERM, then SIGKILL after 10 s).

    Started as ``zenml login --local`` starts it (uvicorn defaults: ``loop``/``http`` auto, so
    uvloop and httptools when installed, which ``zenml[server]`` does), in its own session.
    Raises :class:`ZenmlEnvError` with the log's tail if it does not answer ``/health``.
    ``store_url``: its database (:func:`reference_server_environment`), SQLite if ``None``.
    """
    data_dir.mkdir(parents=True, exist_ok=True)
    env = reference_server_environment(
        data_dir, username=username, password=password, store_url=store_url
    )
    log = data_dir / "server.log"
    argv = [str(python), "-m", "uvicorn", "zenml.zen_server.zen_server_api:app",
            "--host", "127.0.0.1", "--port", str(port), "--no-server-header"]  # fmt: skip
    if not access_log:
        argv.append("--no-access-log")
    with log.open("wb") as output:
        process = subprocess.Popen(
            argv,
            cwd=data_dir,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    server = ReferenceServer(process, port, data_dir, log, username, password, env)
    try:
        _wait_healthy(server, start_timeout)
        yield server
    finally:
        stop_process(process)


def _wait_healthy(server: ReferenceServer, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    with httpx.Client(timeout=2.0, trust_env=False) as http:
        while time.monotonic() < deadline:
            if server.process.poll() is not None:
                raise ZenmlEnvError(
                    f"the reference server exited with {server.process.returncode}:\n"
                    + server.log_tail()
                )
            with contextlib.suppress(httpx.HTTPError):
                if http.get(f"{server.url}/health").status_code == 200:
                    return
            time.sleep(0.25)
    raise ZenmlEnvError(
        f"the reference server did not answer /health within {timeout:.0f}s:\n" + server.log_tail()
    )


def stop_process(process: subprocess.Popen[bytes], grace: float = 10.0) -> None:
    """SIGTERM ``process`` (and its session's group, if it leads one), SIGKILL after ``grace``."""
    if process.poll() is None:
        _signal_group(process, signal.SIGTERM)
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            _signal_group(process, signal.SIGKILL)
            process.wait()
    # Whatever it left in its group (uvicorn has no children here, but be sure).
    _signal_group(process, signal.SIGKILL)


def _signal_group(process: subprocess.Popen[bytes], signum: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if os.getpgid(process.pid) == process.pid:
            os.killpg(process.pid, signum)
            return
    with contextlib.suppress(ProcessLookupError):
        process.send_signal(signum)
