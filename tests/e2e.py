"""Helpers of the end-to-end tests: the `torchbench` command, its failure explained, throwaway repositories."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import git

ROOT = Path(__file__).resolve().parents[1]


def cli(*args, timeout: float = 1800) -> subprocess.CompletedProcess:
    """`python -m torchbench ARGS...` from the project's root, its output captured."""
    return subprocess.run([sys.executable, "-m", "torchbench", *map(str, args)], capture_output=True, text=True,
                          cwd=ROOT, timeout=timeout)


def explain(proc: subprocess.CompletedProcess) -> str:
    return f"exit {proc.returncode}\n--- stdout\n{proc.stdout[-6000:]}\n--- stderr\n{proc.stderr[-3000:]}"


def make_repo(path: Path, commits: list[tuple[str, dict[str, str | None]]]) -> list[str]:
    """Create PATH as a repository with COMMITS, each (message, {relative path: text, or None to delete});
    returns their hashes, oldest first."""
    path.mkdir(parents=True, exist_ok=True)
    repo = git.Repo.init(path, initial_branch="main")
    with repo.config_writer() as cw:
        cw.set_value("user", "name", "t").set_value("user", "email", "t@example.com")
    shas = []
    for message, files in commits:
        for rel, text in files.items():
            target = path / rel
            if text is None:
                repo.index.remove([rel], working_tree=True)
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text)
                repo.index.add([rel])
        shas.append(repo.index.commit(message).hexsha)
    return shas


def broken_links(site: Path) -> list[tuple[str, str]]:
    """(page, link) of every relative link, stylesheet, script or image in SITE's pages whose target is missing."""
    from urllib.parse import unquote, urlsplit

    from bs4 import BeautifulSoup

    bad = []
    for page in sorted(site.rglob("*.html")):
        soup = BeautifulSoup(page.read_text(), "html.parser")
        for tag in soup.find_all(["a", "link", "script", "img"]):
            ref = tag.get("href") or tag.get("src")
            if not ref or urlsplit(ref).scheme or ref.startswith("#"):
                continue
            path = unquote(urlsplit(ref).path)
            if path and not (page.parent / path).exists():
                bad.append((str(page.relative_to(site)), ref))
    return bad
