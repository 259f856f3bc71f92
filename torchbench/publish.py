"""`torchbench publish`: the static site of a run's results.

`asv publish` does the work: our publisher plugin (publisher.py) adds the
Compare tables, series and flame graphs and points asv's own page at local
copies of its CDN scripts. What is left pointing at the internet is said.
"""

from __future__ import annotations

from pathlib import Path

from . import site_assets
from .asv_driver import Asv

__all__ = ["publish"]


def publish(asv: Asv, out: Path) -> list[str]:
    """Publish OUT/html; returns notes for the report (empty when the site needs no internet)."""
    asv.publish()
    return [f"asv's page still loads {url} from the internet" for url in site_assets.remote_urls(out / "html")]
