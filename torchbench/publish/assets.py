"""Serve the asv site's third-party scripts from the site itself.

asv 0.6.6's index.html loads jQuery, flot, bootstrap and friends from CDNs;
on a machine without internet (CI, or a firewalled benchmark box) the page
shows only "Can not determine continental origin of swallow". After
`asv publish` we fetch the same files from the npm registry (`npm pack`,
cached), copy them next to index.html and point the page at them. Without
npm or the registry the CDN links stay and we say so.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from .. import tools

# CDN URL (as in asv's index.html) -> (npm package, file inside it, where it goes in the site)
ASSETS = {
    "https://code.jquery.com/jquery-3.3.1.min.js": ("jquery@3.3.1", "dist/jquery.min.js", "vendor/jquery.min.js"),
    "https://cdnjs.cloudflare.com/ajax/libs/flot/0.8.3/jquery.flot.min.js":
        ("flot@0.8.3", "jquery.flot.js", "vendor/jquery.flot.js"),
    "https://cdnjs.cloudflare.com/ajax/libs/flot/0.8.3/jquery.flot.time.min.js":
        ("flot@0.8.3", "jquery.flot.time.js", "vendor/jquery.flot.time.js"),
    "https://cdnjs.cloudflare.com/ajax/libs/flot/0.8.3/jquery.flot.selection.min.js":
        ("flot@0.8.3", "jquery.flot.selection.js", "vendor/jquery.flot.selection.js"),
    "https://cdnjs.cloudflare.com/ajax/libs/flot/0.8.3/jquery.flot.categories.min.js":
        ("flot@0.8.3", "jquery.flot.categories.js", "vendor/jquery.flot.categories.js"),
    "https://cdn.jsdelivr.net/npm/flot-orderbars@1.0.0/js/jquery.flot.orderBars.js":
        ("flot-orderbars@1.0.0", "js/jquery.flot.orderBars.js", "vendor/jquery.flot.orderBars.js"),
    # stupidtable 1.0.1 is on cdnjs only; npm has the same plugin as 1.1.3.
    "https://cdnjs.cloudflare.com/ajax/libs/stupidtable/1.0.1/stupidtable.min.js":
        ("stupid-table-plugin@1.1.3", "stupidtable.min.js", "vendor/stupidtable.min.js"),
    "https://cdnjs.cloudflare.com/ajax/libs/blueimp-md5/2.19.0/js/md5.min.js":
        ("blueimp-md5@2.19.0", "js/md5.min.js", "vendor/md5.min.js"),
    "https://cdn.jsdelivr.net/npm/bootstrap@3.1.1/dist/js/bootstrap.min.js":
        ("bootstrap@3.1.1", "dist/js/bootstrap.min.js", "vendor/js/bootstrap.min.js"),
    "https://cdn.jsdelivr.net/npm/bootstrap@3.1.1/dist/css/bootstrap.min.css":
        ("bootstrap@3.1.1", "dist/css/bootstrap.min.css", "vendor/css/bootstrap.min.css"),
}
# bootstrap.min.css refers to ../fonts/glyphicons-*: the whole folder comes along.
EXTRA_DIRS = {("bootstrap@3.1.1", "dist/fonts"): "vendor/fonts"}

_TAG = re.compile(r'(<(?:script|link)\b[^>]*?(?:src|href)=")(https://[^"]+)("[^>]*>)')


def _packages(cache: Path) -> dict[str, Path]:
    """npm package spec -> its unpacked folder, fetching what the cache lacks."""
    specs = sorted({spec for spec, _, _ in ASSETS.values()} | {spec for spec, _ in EXTRA_DIRS})
    return {spec: tools.npm_package(spec, cache) for spec in specs}


def localize(html_dir: Path, cache: Path) -> list[str]:
    """Copy the CDN assets into `html_dir` and rewrite index.html to use them.

    Returns the URLs still pointing outside (empty when all were replaced).
    """
    if tools.find("npm") is None:
        raise RuntimeError("npm is not installed: the site keeps its CDN links (it needs internet to render)")
    packages = _packages(cache)
    for url, (spec, inner, local) in ASSETS.items():
        dest = html_dir / local
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(packages[spec] / inner, dest)
    for (spec, inner), local in EXTRA_DIRS.items():
        shutil.copytree(packages[spec] / inner, html_dir / local, dirs_exist_ok=True)

    index = html_dir / "index.html"
    remaining = []

    def rewrite(match: re.Match) -> str:
        url = match.group(2)
        if url not in ASSETS:
            remaining.append(url)
            return match.group(0)
        # Subresource-integrity hashes belong to the CDN builds: drop them.
        tail = re.sub(r'\s+(integrity|crossorigin|referrerpolicy)="[^"]*"', "", match.group(3))
        return f"{match.group(1)}{ASSETS[url][2]}{tail}"

    index.write_text(_TAG.sub(rewrite, index.read_text()))
    return remaining


def remote_urls(html_dir: Path) -> list[str]:
    """The scripts and stylesheets asv's index.html still loads from outside the site."""
    index = html_dir / "index.html"
    return [m.group(2) for m in _TAG.finditer(index.read_text())] if index.exists() else []
