"""`torchbench publish`: the static site of a run's results.

`asv publish` does the work: our publisher plugin (publisher.py) adds the
Compare tables, series and flame graphs and points asv's own page at local
copies of its CDN scripts. What is left pointing at the internet is said.
"""

from __future__ import annotations

from pathlib import Path

from ..asv_bridge.driver import Asv, Timings
from ..errors import UserError
from ..project import lock
from . import assets

__all__ = ["publish", "publish_folder"]


def publish(asv: Asv, out: Path) -> list[str]:
    """Publish OUT/html; returns notes for the report (empty when the site needs no internet)."""
    asv.publish()
    return [f"asv's page still loads {url} from the internet" for url in assets.remote_urls(out / "html")]


def publish_folder(out: Path) -> list[str]:
    """Publish the output folder of an earlier `torchbench run` (locked while it publishes)."""
    out = out.resolve()
    conf = out / "asv.conf.json"
    if not conf.exists():
        raise UserError(f"{out}: no asv.conf.json; run `torchbench run --out {out}` first")
    with lock.exclusive(out) as fd:
        return publish(Asv(conf, Timings(), keep_fds=(fd,)), out)
