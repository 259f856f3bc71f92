"""The record of a history's steps (OUT/changepoints.json): what `find` confirmed, refuted and bisected.

Written by `torchbench find` (atomically, after each confirmation, so an
interrupted find keeps what it measured) and read by the publisher, which
joins it with the steps it detects afresh.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path

from torchbench_core.storage import atomic_write_text

from ..errors import UserError
from ..stats import INCONCLUSIVE  # a step whose confirmation could not decide: the verdict's own word

__all__ = ["RECORD", "SCHEMA", "CONFIRMED", "REFUTED", "UNCONFIRMED", "INCONCLUSIVE", "read_record",
           "record_key", "shown_status", "write_record"]

RECORD = "changepoints.json"
SCHEMA = "torchbench.changepoints/1"
CONFIRMED, REFUTED, UNCONFIRMED = "confirmed", "refuted", "unconfirmed"


def shown_status(status: str) -> str:
    """A step's status as every view shows it (find's listing, the Steps page): a confirmation that could not
    decide is *undecided*, the alert's word, kept with its interval and never dropped; the record keeps
    INCONCLUSIVE."""
    return "undecided" if status == INCONCLUSIVE else status


def record_key(entry: dict) -> str:
    """A step is the same step while its series and its commits are: asv's feed identifies it so too."""
    return f"{entry['key']}|{entry['before']}|{entry['after']}"


def read_record(out: Path) -> dict[str, dict]:
    """The steps `find` recorded, by record_key; an unreadable record is an error that names the file."""
    path = out / RECORD
    if not path.exists():
        return {}
    try:
        doc = json.loads(path.read_text())
        if doc.get("schema") != SCHEMA or not isinstance(doc.get("steps"), list):
            raise ValueError(f"not a {SCHEMA} document")
        return {record_key(s): s for s in doc["steps"]}
    except (ValueError, KeyError, TypeError) as e:
        raise UserError(f"{path}: unreadable ({e}); move it away to start afresh") from None


def write_record(out: Path, steps: dict[str, dict]) -> None:
    doc = {"schema": SCHEMA, "updated": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "steps": sorted(steps.values(), key=lambda s: (s["key"], s["before"]))}
    atomic_write_text(out / RECORD, json.dumps(doc, indent=1, allow_nan=False) + "\n")
