"""Every reference in the docs and the code's docstrings and comments resolves
inside the repository: relative Markdown links, and paths cited in prose
(`services/router/broker.py`, `tests/unit/test_import_graph.py::test_…`,
`docs/ha.md`). A renamed or deleted file must take its citations with it."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TOP = ("meshmq", "services", "tests", "bench", "deploy", "scripts", "proto", "docs", "spark", ".ci")
# A path as prose cites it: starts at a top-level folder, not inside a longer path or a URL.
CITED = re.compile(r"(?<![\w/.\-~$])((?:%s)/[A-Za-z0-9_./\-*]*[A-Za-z0-9_/*])" % "|".join(re.escape(t) for t in TOP))
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
MARKDOWN = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
CODE_DIRS = ("meshmq", "services", "bench", "scripts", "spark", "tests")


def _code_files() -> list[Path]:
    files = []
    for d in CODE_DIRS:
        files += [p for p in (ROOT / d).rglob("*.py") if "meshmq/v1/" not in p.as_posix()]
    return sorted(files)


def _exists(cited: str) -> bool:
    """Whether a cited path (a file, a folder, `file::test`, or a glob such as `deploy/compose/n1*.yaml`) is there."""
    path = cited.split("::")[0].rstrip(".")
    if "*" in path:
        return any(ROOT.glob(path))
    return (ROOT / path).exists()


def _missing_citations(path: Path) -> list[str]:
    text = path.read_text()
    return [f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(1)}"
            for m in CITED.finditer(text) if not _exists(m.group(1))]


def test_markdown_links_resolve():
    broken = []
    for doc in MARKDOWN:
        text = doc.read_text()
        for m in LINK.finditer(text):
            target = m.group(1)
            if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
                continue  # a URL or an anchor on the same page
            if not (doc.parent / target.split("#")[0]).exists():
                broken.append(f"{doc.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}: {target}")
    assert broken == []


def test_paths_cited_in_the_docs_exist():
    assert [c for doc in MARKDOWN for c in _missing_citations(doc)] == []


def test_paths_cited_in_the_code_exist():
    assert [c for f in _code_files() for c in _missing_citations(f)] == []


def test_nothing_cites_files_outside_the_repository():
    outside = re.compile(r"\.\./shared|DESIGN\.md|seeds/")
    hits = [f"{p.relative_to(ROOT)}:{i}" for p in [*MARKDOWN, *_code_files()] if p != Path(__file__)
            for i, line in enumerate(p.read_text().splitlines(), 1) if outside.search(line)]
    assert hits == []
