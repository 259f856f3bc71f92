"""Throwaway git repositories for end-to-end tests: a commit is a dict of file changes."""

from __future__ import annotations

from pathlib import Path

import git


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
