"""The docs hold together: every relative link in the READMEs and ``docs/`` points at a file
that exists (and at a heading that exists, when it names one), the README stays a front
door, not a manual, and the claims the docs make about the code that a test can check (a
file path, a setting's name and default, the middleware's order, a command) are true."""

from __future__ import annotations

import re
import subprocess
from datetime import timedelta
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README_MAX_LINES = 250

FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"\[[^\]\n]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)


def documents() -> list[Path]:
    """The Markdown files a reader follows links through."""
    found = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "bench" / "README.md"]
    found += [ROOT / "deploy" / "README.md", ROOT / "deploy" / "k8s" / "README.md"]
    found += sorted((ROOT / "docs").glob("*.md"))
    found += sorted((ROOT / "services").glob("*/README.md"))
    found += sorted((ROOT / "bench" / "results").glob("*.md"))
    return [path for path in found if path.is_file()]


def prose(text: str) -> str:
    """``text`` without fenced code blocks and code spans, where brackets are not links."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def anchors(path: Path) -> set[str]:
    """The anchors GitHub gives the headings of ``path`` (a repeated one gets ``-1``, ...)."""
    seen: dict[str, int] = {}
    for title in HEADING.findall(FENCE.sub("", path.read_text())):
        slug = re.sub(r"[^\w\- ]", "", title.replace("`", "").lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        if count:
            seen[f"{slug}-{count}"] = 1
    return set(seen)


def relative_links(path: Path) -> list[str]:
    return [
        target
        for target in LINK.findall(prose(path.read_text()))
        if not re.match(r"^[a-z][a-z0-9+.-]*:", target)
    ]


def broken_links(path: Path) -> list[str]:
    broken = []
    for target in relative_links(path):
        file_part, _, anchor = target.partition("#")
        linked = (path.parent / file_part).resolve() if file_part else path
        if not linked.exists():
            broken.append(f"{target} (no such file)")
        elif anchor and linked.is_file() and anchor not in anchors(linked):
            broken.append(f"{target} (no such heading)")
    return broken


@pytest.mark.parametrize("path", documents(), ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(path: Path) -> None:
    assert broken_links(path) == []


def test_every_topic_page_is_reachable_from_the_readme() -> None:
    reachable = {
        (ROOT / target.partition("#")[0]).resolve() for target in relative_links(ROOT / "README.md")
    }
    pages = {*(ROOT / "docs").glob("*.md"), *(ROOT / "services").glob("*/README.md")}
    assert sorted(str(p.relative_to(ROOT)) for p in pages - reachable) == []


def test_readme_stays_a_front_door() -> None:
    lines = (ROOT / "README.md").read_text().splitlines()
    first_block = "\n".join(lines[:6])
    assert len(lines) < README_MAX_LINES
    assert "make run" in first_block
    assert "make test" in first_block


def test_anchors_are_githubs(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "# Settings (environment)\n## A service's layout\n### `make run`, the stack\n"
        "## Runs\n## Runs\n```\n# not a heading\n```\n"
    )
    assert anchors(page) == {
        "settings-environment",
        "a-services-layout",
        "make-run-the-stack",
        "runs",
        "runs-1",
    }


# --- claims the docs make about the code -----------------------------------------------

PATH_SPAN = re.compile(r"`((?:services|shared|deploy|tests|bench|docs)/[\w./-]*)`")
REMOVED_SECTION = re.compile(r"^### Removed\n.*?(?=^#)", re.MULTILINE | re.DOTALL)


def named_path_exists(text: str) -> bool:
    """Whether a path the docs name exists: from the repository's root, or a ``shared/``
    module named as the library's (``shared/db.py`` for ``shared/shared/db.py``)."""
    path = text.rstrip("/")
    if (ROOT / path).exists():
        return True
    return path.startswith("shared/") and (ROOT / "shared" / path).exists()


def git_ignored(path: str) -> bool:
    done = subprocess.run(["git", "check-ignore", "-q", path], cwd=ROOT, check=False)
    return done.returncode == 0


@pytest.mark.parametrize("path", documents(), ids=lambda p: str(p.relative_to(ROOT)))
def test_the_files_the_docs_name_exist(path: Path) -> None:
    # A "Removed" section names what is gone; a git-ignored file is one the reader makes.
    text = REMOVED_SECTION.sub("", FENCE.sub("", path.read_text()))
    missing = [
        named
        for named in PATH_SPAN.findall(text)
        if not named_path_exists(named) and not git_ignored(named)
    ]
    assert missing == []


def test_architecture_lists_the_middleware_in_their_order() -> None:
    flow = (ROOT / "docs" / "architecture.md").read_text().split("## How a request flows")[1]
    step = flow.split("\n2. ")[1].split("\n3. ")[0]
    documented = re.findall(r"`(\w+Middleware)`", step)
    source = (ROOT / "shared" / "shared" / "app.py").read_text()
    installed = re.findall(r"Middleware\(\s*(\w+Middleware)\b", source)
    assert documented == installed


def test_replica_ports_are_as_deployment_md_says() -> None:
    from deploy.config import load_stack

    text = (ROOT / "docs" / "deployment.md").read_text()
    claimed = re.search(r"tracking's: (\d+), (\d+), (\d+)", text)
    assert claimed is not None
    tracking = load_stack().with_replicas({"tracking": 3}).service("tracking")
    assert tracking.replica_ports() == tuple(int(port) for port in claimed.groups())
    assert tracking.replica_names() == ("tracking#1", "tracking#2", "tracking#3")


def test_the_schema_names_architecture_md_gives_are_the_services() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text()
    line = next(line for line in text.splitlines() if "schemas.py " in line)
    suffixes = re.findall(r"X(\w+)", line)
    assert suffixes
    defined = {
        name
        for path in (ROOT / "services").glob("*/*/*/schemas.py")
        for name in re.findall(r"^class (\w+)\(", path.read_text(), flags=re.MULTILINE)
    }
    for suffix in suffixes:
        assert any(name.endswith(suffix) for name in defined), suffix


def test_only_the_modules_architecture_md_names_read_the_environment() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text().split("## Settings")[1]
    named = set(re.findall(r"`shared\.(\w+)`", text))
    readers = {
        str(path.relative_to(ROOT))
        for top in (ROOT / "services", ROOT / "shared")
        for path in top.rglob("*.py")
        if path.name != "settings.py"
        and "__pycache__" not in path.parts
        and re.search(r"os\.environ|os\.getenv|getenv\(", path.read_text())
    }
    assert readers == {f"shared/shared/{module}.py" for module in named}


def _documented_default(text: str) -> object:
    """A default as deployment.md's settings table writes it, or ``None`` when it is
    prose (``local``, ``a fixed UUID``)."""
    text = text.split(" (")[0].strip()
    if match := re.fullmatch(r"(\d+) (s|min|MiB)", text):
        number, unit = int(match[1]), match[2]
        if unit == "MiB":
            return number * 1024 * 1024
        return timedelta(seconds=number) if unit == "s" else timedelta(minutes=number)
    if re.fullmatch(r"\d+", text):
        return int(text)
    if text in {"true", "false"}:
        return text == "true"
    if text == "empty":
        return ""
    if match := re.fullmatch(r"`([^`<]*)`", text):
        return match[1]
    return None


def test_the_shared_settings_table_names_each_setting_and_its_default() -> None:
    from shared.settings import ServiceSettings

    section = (ROOT / "docs" / "deployment.md").read_text().split("\n## Settings\n")[1]
    section = section.split("\n#")[0]
    rows = re.findall(r"^\| (`[A-Z_]+`(?:, `[A-Z_]+`)*) \| ([^|]*) \|", section, re.MULTILINE)
    assert rows
    checked = 0
    for names_cell, defaults_cell in rows:
        names = re.findall(r"`([A-Z_]+)`", names_cell)
        defaults = defaults_cell.split(", ") if len(names) > 1 else [defaults_cell]
        for name, default in zip(names, defaults, strict=False):
            field = ServiceSettings.model_fields.get(name.lower())
            assert field is not None, f"{name} is no setting of ServiceSettings"
            expected = _documented_default(default)
            if expected is not None:
                assert field.default == expected, name
                checked += 1
    assert checked >= 15


def test_the_commands_the_readme_starts_with_are_make_targets() -> None:
    makefile = (ROOT / "Makefile").read_text()
    targets = set(re.findall(r"^([\w-]+):", makefile, flags=re.MULTILINE))
    first = (ROOT / "README.md").read_text().split("```")[1]
    commands = re.findall(r"^make (\w+)", first, flags=re.MULTILINE)
    assert commands
    assert set(commands) <= targets
