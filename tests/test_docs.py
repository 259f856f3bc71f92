"""The README and docs/: short and true where a newcomer starts, every link resolving, and the pages
building as a site with mkdocs (--strict: a broken link, anchor or missing page is an error)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest

from e2e import ROOT

README = ROOT / "README.md"
DOCS = ROOT / "docs"
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"(?ms)^```.*?^```")


def _slug(heading: str) -> str:
    """Python-Markdown's toc slug (what mkdocs and GitHub both make of a plain heading)."""
    text = re.sub(r"[`*_]", "", heading)
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def _anchors(path: Path) -> set[str]:
    text = FENCE.sub("", path.read_text())
    return {_slug(m.group(1)) for m in re.finditer(r"(?m)^#+ (.+)$", text)}


def _pages() -> list[Path]:
    return [README, *sorted(DOCS.glob("*.md"))]


@pytest.mark.parametrize("page", _pages(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_link_and_anchor_resolves(page):
    text = FENCE.sub("", page.read_text())
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):  # an external address: not checked offline
            continue
        where, _, anchor = target.partition("#")
        dest = (page.parent / where).resolve() if where else page
        assert dest.exists(), f"{page.name}: {target} does not exist"
        if anchor:
            assert anchor in _anchors(dest), f"{page.name}: {target}: no heading with that anchor"


def test_the_readme_is_short_and_holds_exactly_the_two_set_up_commands():
    text = README.read_text()
    assert len(text.splitlines()) <= 160
    blocks = [b.strip("`\n").strip() for b in FENCE.findall(text)]
    assert blocks == ["bash scripts/main.sh", "bash scripts/test.sh"], blocks
    for script in ("scripts/main.sh", "scripts/test.sh"):
        assert (ROOT / script).is_file()
    assert "bash scripts/test.sh" in (ROOT / ".ci" / "run").read_text()


def test_the_readme_names_the_design_cards_top_level_and_it_is_there():
    text = README.read_text()
    for name in ("asv.conf.json", "benchmarks/", "torchbench_core/", "html_templates/", "tests/", "README.md"):
        assert (ROOT / name.rstrip("/")).exists(), name
        assert f"`{name}`" in text or name == "README.md", name


def test_every_docs_page_is_in_the_site_navigation():
    nav = (ROOT / "mkdocs.yml").read_text()
    for page in DOCS.glob("*.md"):
        assert f" {page.name}" in nav, f"{page.name} is not in mkdocs.yml's nav"


def test_the_docs_build_as_a_site_with_no_warning(tmp_path):
    if shutil.which("mkdocs") is None and subprocess.run([sys.executable, "-m", "mkdocs", "--version"],
                                                        capture_output=True).returncode != 0:
        pytest.fail("mkdocs is not installed: scripts/install.sh installs it with the test extras")
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "site" / "results" / "index.html").is_file()
