"""The docs hold together: every relative link in the READMEs and ``docs/`` points at a file
that exists (and at a heading that exists, when it names one), and the README stays a front
door, not a manual."""

from __future__ import annotations

import re
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
    found = [ROOT / "README.md", ROOT / "bench" / "README.md"]
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
