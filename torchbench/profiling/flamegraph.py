"""Flame graphs of `torchbench profile`: where they are kept, how they are read, drawn and compared.

`torchbench profile` keeps, per commit, benchmark and parameter index, the
samples py-spy took (collapsed stacks: "frame;frame;... count" lines), an SVG
flame graph drawn from exactly those samples, and a JSON record of how they
were taken:

    OUT/profiles/<full sha>/<benchmark name>/<param index>.collapsed | .svg | .json

The publisher reads them through `available`, and shows what changed between
two commits as a differential flame graph: head's graph, each frame coloured
by how many more (red) or fewer (blue) samples it holds than in base, with
base scaled to head's total so that counts of profiles of different lengths
compare. The page is d3-flame-graph's (vendored from npm by
`vendor_assets`), with the tree inline in the page: asv-style XHR of a JSON
file is blocked under file://, an inline tree is not.

Frame names are py-spy's: "function (file.py:line)" for Python and
"symbol (library.so)" for native frames, "0x7f... (lib.so)" where a native
frame has no symbol. `normalise` drops what differs between two processes or
two commits without a change in the code that runs (load addresses, line
numbers), so that a comparison matches frames by what they are.
"""

from __future__ import annotations

import colorsys
import hashlib
import html
import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import markupsafe
import orjson

from torchbench_core.storage import atomic_write_text

from .. import resources
from ..tools import npm_package

__all__ = ["ASSETS", "Profile", "script_json", "available", "differential_tree", "location", "normalise", "parse_collapsed",
           "read_collapsed", "render_svg", "vendor_assets", "write_differential_page"]

PROFILES = "profiles"
VENDOR = "vendor/flamegraph"
# d3-flame-graph 4.x is written against d3 v7's modules (its package.json depends on d3-selection ^3,
# d3-scale ^4, d3-hierarchy ^3: the v7 generation); the page itself calls d3.select.
ASSETS = {
    "d3@7.9.0": {"dist/d3.min.js": "d3.min.js", "LICENSE": "d3.LICENSE.txt"},
    "d3-flame-graph@4.1.3": {"dist/d3-flamegraph.min.js": "d3-flamegraph.min.js",
                             "dist/d3-flamegraph-colorMapper.min.js": "d3-flamegraph-colorMapper.min.js",
                             "dist/d3-flamegraph.css": "d3-flamegraph.css",
                             "LICENSE": "d3-flame-graph.LICENSE.txt"},
}

_ADDRESS = re.compile(r"^0x[0-9a-fA-F]+ (\([^()]*\))$")
_LINE = re.compile(r":\d+\)$")


@dataclass(frozen=True)
class Profile:
    """One recorded profile: a benchmark's parameter combination at a commit."""

    sha: str
    benchmark: str
    index: int
    svg: Path
    collapsed: Path
    meta: Path

    def metadata(self) -> dict:
        return json.loads(self.meta.read_text())


def location(out: Path, sha: str, benchmark: str, index: int) -> Profile:
    """Where the profile of (sha, benchmark, index) lives under OUT (whether or not it exists)."""
    if not benchmark or "/" in benchmark or benchmark.startswith("."):
        raise ValueError(f"{benchmark!r}: not a benchmark name that can be a folder")
    base = Path(out) / PROFILES / sha / benchmark / str(index)
    return Profile(sha, benchmark, index, base.with_suffix(".svg"), base.with_suffix(".collapsed"),
                   base.with_suffix(".json"))


def available(out: Path) -> dict[tuple[str, str, int], Profile]:
    """Every complete profile under OUT, by (sha, benchmark, index). The JSON record is written last,
    so a profile whose three files are all there is whole."""
    found = {}
    for meta in sorted((Path(out) / PROFILES).glob("*/*/*.json")):
        if not meta.stem.isdigit():
            continue  # a temporary file of an interrupted write
        p = location(out, meta.parent.parent.name, meta.parent.name, int(meta.stem))
        if p.svg.is_file() and p.collapsed.is_file():
            found[(p.sha, p.benchmark, p.index)] = p
    return found


def parse_collapsed(text: str, where: str = "collapsed stacks") -> dict[str, int]:
    """Collapsed stacks ("frame;frame;... count" per line) as {stack: count}; repeated stacks add up."""
    stacks: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        stack, _, count = line.rstrip().rpartition(" ")
        if not stack or not count.isdigit():
            raise ValueError(f"{where}, line {number}: expected 'frame;frame;... count', got {line[:120]!r}")
        stacks[stack] = stacks.get(stack, 0) + int(count)
    return stacks


def read_collapsed(path: Path) -> dict[str, int]:
    """A .collapsed file as {stack: count}."""
    return parse_collapsed(Path(path).read_text(encoding="utf-8"), str(path))


def normalise(stacks: dict[str, int], *, line_numbers: bool = False) -> dict[str, int]:
    """Stacks with unsymbolised native frames' addresses replaced by "??" (they move with ASLR) and,
    unless `line_numbers`, Python frames' line numbers dropped (they move when code above moves)."""
    out: dict[str, int] = {}
    for stack, count in stacks.items():
        frames = []
        for frame in stack.split(";"):
            frame = _ADDRESS.sub(r"?? \1", frame)
            if not line_numbers:
                frame = _LINE.sub(")", frame)
            frames.append(frame)
        key = ";".join(frames)
        out[key] = out.get(key, 0) + count
    return out


class _Node:
    __slots__ = ("name", "value", "children")

    def __init__(self, name: str) -> None:
        self.name, self.value, self.children = name, 0, {}


def _trie(stacks: dict[str, int], root_name: str = "all") -> _Node:
    """The call tree, each node holding its inclusive count (its own samples and its callees')."""
    root = _Node(root_name)
    for stack, count in stacks.items():
        root.value += count
        node = root
        for frame in stack.split(";"):
            node = node.children.setdefault(frame, _Node(frame))
            node.value += count
    return root


def differential_tree(base: dict[str, int], head: dict[str, int]) -> dict:
    """d3-flame-graph's tree of `head`, each node with a `delta` for its differential colours.

    value: the node's inclusive sample count in head (d3-flame-graph's default, selfValue(false)).
    delta: value minus the same node's inclusive count in base, base scaled to head's total; so
    the root's delta is 0 and a frame new in head has delta == value (drawn orange). Deltas are
    inclusive, as the colour mapper reads them without computeDelta (which would add children's
    deltas to each node's own). Frames found only in base are not in the tree: head's graph has
    no room for them; their loss shows in their parents' deltas.
    """
    head_root, base_root = _trie(head), _trie(base)
    scale = head_root.value / base_root.value if base_root.value else 0.0

    def build(h: _Node, b: _Node | None) -> dict:
        delta = h.value - scale * (b.value if b is not None else 0)
        return {"name": h.name, "value": h.value, "delta": round(delta, 6),
                "children": [build(child, b.children.get(name) if b is not None else None)
                             for name, child in sorted(h.children.items())]}

    return build(head_root, base_root)


def _colour(frame: str) -> str:
    """flamegraph.pl's idea: warm colours, the hue fixed per name; Python frames yellow, native red."""
    digest = hashlib.blake2b(frame.encode(), digest_size=2).digest()
    jitter = int.from_bytes(digest, "big") / 0xFFFF
    python = re.search(r"\.py[xw]?(:\d+)?\)$|\(<[^>]*>(:\d+)?\)$", frame) is not None
    hue = (40 + 15 * jitter) if python else (5 + 20 * jitter)
    r, g, b = colorsys.hls_to_rgb(hue / 360, 0.62, 0.85)
    return f"rgb({round(r * 255)},{round(g * 255)},{round(b * 255)})"


def render_svg(stacks: dict[str, int], *, title: str, subtitle: str = "", width: int = 1200,
               frame_height: int = 16, min_width: float = 0.1) -> str:
    """A static flame graph (root at the bottom, callees above, width = samples) as SVG text.

    py-spy draws SVGs only while it records (inferno, inside py-spy), and one recording can be
    written in one format only; this draws the same picture from the collapsed stacks kept, so
    the SVG and the .collapsed file hold the very same samples. Each frame's <title> says its
    name and samples (hover in a browser); frames narrower than `min_width` px are left out.
    """
    root = _trie(stacks)
    pad, top = 10, 56
    plot = width - 2 * pad
    rects: list[str] = []

    def depth_of(node: _Node, depth: int) -> int:
        return max([depth] + [depth_of(c, depth + 1) for c in node.children.values()])

    max_depth = depth_of(root, 0)
    height = top + (max_depth + 1) * frame_height + 2 * pad
    total = root.value or 1

    def draw(node: _Node, x: float, depth: int) -> None:
        w = node.value / total * plot
        if w < min_width:
            return
        y = height - pad - (depth + 1) * frame_height
        share = 100 * node.value / total
        name = html.escape(node.name, quote=True)
        fill = "rgb(200,200,200)" if depth == 0 else _colour(node.name)
        label = ""
        chars = int((w - 6) / 7)  # Verdana 12px: about 7 px a character
        if chars >= 3:
            text = node.name if len(node.name) <= chars else node.name[:chars - 2] + ".."
            label = f'<text x="{x + 3:.2f}" y="{y + frame_height - 4}">{html.escape(text)}</text>'
        rects.append(f'<g><title>{name} ({node.value} samples, {share:.2f}%)</title>'
                     f'<rect x="{x:.2f}" y="{y}" width="{w:.2f}" height="{frame_height - 1}" fill="{fill}" '
                     f'rx="2"/>{label}</g>')
        for child_name in sorted(node.children):
            child = node.children[child_name]
            draw(child, x, depth + 1)
            x += child.value / total * plot

    draw(root, pad, 0)
    return "\n".join([
        '<?xml version="1.0" standalone="no"?>',
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="Verdana, sans-serif" font-size="12">',
        f'<rect x="0" y="0" width="{width}" height="{height}" fill="rgb(250,250,245)"/>',
        f'<text x="{width / 2}" y="22" font-size="16" text-anchor="middle">{html.escape(title)}</text>',
        f'<text x="{width / 2}" y="42" text-anchor="middle" fill="rgb(90,90,90)">{html.escape(subtitle)}</text>',
        *rects,
        "</svg>",
        "",
    ])


def script_json(value) -> markupsafe.Markup:
    """JSON that can sit inside <script>: no '<', '>' or '&' (so no '</script>' or '<!--' in a frame
    name can end the element); JSON.parse reads the \\u escapes back as the characters.
    Written by orjson: a site of 2000 commits x 200 rows inlines ~2 million floats in its pages, and the
    json module's float formatting took ~2 s of the publish (profiled), orjson's 25x less. JSON has no NaN:
    a NaN or infinity is written as null (json.dumps would have refused it)."""
    text = orjson.dumps(value, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS).decode()
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return markupsafe.Markup(text)


def write_differential_page(base_profile: Profile, head_profile: Profile, dest_html: Path, assets_rel: str,
                            title: str) -> None:
    """A standalone HTML page: head's flame graph coloured by the change from base (red grew, blue
    shrank, orange new). `assets_rel` is the vendored assets' folder relative to the page's folder
    (what vendor_assets returned, with '../' as the page's depth needs). Works from file://."""
    base = normalise(read_collapsed(base_profile.collapsed))
    head = normalise(read_collapsed(head_profile.collapsed))
    text = resources.jinja_environment().get_template("flamegraph_diff.html.j2").render(
        title=title, assets=assets_rel.rstrip("/"), tree_json=script_json(differential_tree(base, head)),
        base=base_profile.metadata(), head=head_profile.metadata(),
        base_total=sum(base.values()), head_total=sum(head.values()))
    atomic_write_text(dest_html, text)


def vendor_assets(html_dir: Path, cache: Path) -> str:
    """Copy d3 and d3-flame-graph (pinned, from npm, cached in `cache`) into html_dir/vendor/flamegraph;
    returns that folder relative to html_dir. Raises RuntimeError without npm or the registry."""
    dest = Path(html_dir) / VENDOR
    dest.mkdir(parents=True, exist_ok=True)
    for spec, files in ASSETS.items():
        package = npm_package(spec, Path(cache))
        for inner, name in files.items():
            shutil.copyfile(package / inner, dest / name)
    return VENDOR
