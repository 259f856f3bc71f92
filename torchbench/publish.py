"""`torchbench publish`: asv's static site of a run's results, made to work offline.

For now this is asv's own site (grid and per-benchmark graphs) with its
third-party scripts served from the site itself (site_assets).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from . import site_assets
from .asv_driver import Asv

__all__ = ["publish"]


def publish(asv: Asv, out: Path) -> list[str]:
    """Publish OUT/html; returns notes for the report (empty when the site needs no internet)."""
    asv.publish()
    try:
        remaining = site_assets.localize(out / "html", out / "site-assets")
    except (RuntimeError, OSError, subprocess.SubprocessError) as e:
        return [f"the site still loads its scripts from CDNs ({e})"]
    return [f"the site still loads {url} from the internet" for url in remaining]
