"""torchbench's package data, found with importlib.resources, and the one jinja environment.

Templates and static files, the default asv suites, the base asv
configuration, the example's patch series and the JSON schemas ship inside
the package (pyproject's package-data), so an installed wheel finds them from
any folder exactly as an editable checkout does. In a checkout the suites and
templates are the top-level `benchmarks/` and `html_templates/`; pyproject's
package-dir ships them as `torchbench.benchmarks` and
`torchbench.html_templates`, and an editable install maps those names back
onto the folders. asv and git need real folders, so each is returned as a
filesystem path; a package imported from a zip (which pip never installs) is
refused with a clear error.
"""

from __future__ import annotations

import functools
import importlib.util
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    import jinja2

__all__ = ["base_config_file", "example_patches", "harness", "jinja_environment", "package_files", "schema",
           "static", "suites", "templates"]


def _path(package: str, *parts: str) -> Path:
    node = resources.files(package).joinpath(*parts)
    if not isinstance(node, Path):  # a zipped package: asv and git cannot read folders inside it
        raise RuntimeError(f"{package} is not installed as files ({node}); install it with pip")
    return node


def _top_level(package: str, folder: str) -> Path:
    """A folder the checkout keeps at its top level and a wheel ships as `package` (see above).

    Found by its import spec, not imported: the suites' __init__ is for benchmark processes alone. A
    checkout used without installing it (its root on sys.path, as `python -m torchbench` there) has no
    such package: the folder beside the torchbench package is then the one."""
    spec = importlib.util.find_spec(package)
    if spec is not None and spec.submodule_search_locations:
        found = Path(next(iter(spec.submodule_search_locations)))
        if found.is_dir():
            return found
        raise RuntimeError(f"{package} is not installed as files ({found}); install it with pip")
    beside = Path(__file__).resolve().parent.parent / folder
    if (beside / "__init__.py").is_file():
        return beside
    raise RuntimeError(f"{package} is missing: reinstall torchbench (pip install torchbench-tracker, or pip "
                       f"install -e . in a checkout)")


def templates() -> Path:
    """The jinja2 templates (pages, differential flame graph, alert comment): html_templates/."""
    return _top_level("torchbench.html_templates", "html_templates")


def static() -> Path:
    """The pages' CSS and script, copied into every site."""
    return templates() / "static"


def suites() -> Path:
    """torchbench's own asv suites (the `__torch_function__` overhead, operators, counts...), benchmarks/:
    the default suite folder, and the one a torch build (`run --existing`) is measured with."""
    return _top_level("torchbench.benchmarks", "benchmarks")


def base_config_file() -> Path:
    """The base asv configuration that every run's configuration is derived from."""
    return _path("torchbench", "project", "asv.conf.json")


def example_patches() -> Path:
    """The embedded example library's patch series (examples of the flow: see its README)."""
    return _path("torchbench", "project", "tensorlib", "patches")


def schema(name: str) -> Path:
    return _path("torchbench", "schemas", name)


def harness() -> Path:
    """The torchbench_core package folder: the harness benchmark processes import."""
    return _path("torchbench_core")


def package_files(*subpackages: str) -> list[Path]:
    """The .py files of these torchbench subpackages and the templates: what a rendered page depends on."""
    files = [p for sub in subpackages for p in _path("torchbench", sub).glob("*.py")]
    files.append(_path("torchbench", "stats.py"))  # every page's statistics, colour rule included
    data = [p for p in templates().rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    return sorted([*files, *data])


@functools.lru_cache(maxsize=None)
def _loader() -> "jinja2.FileSystemLoader":
    import jinja2

    return jinja2.FileSystemLoader(templates())


def jinja_environment(*, filters: dict[str, Callable] | None = None, globals: dict | None = None,
                      **options) -> "jinja2.Environment":
    """The jinja2 environment every page, comment and flame-graph page is rendered with: autoescaped,
    undefined names an error. `options` are jinja's whitespace settings (trim_blocks, ...)."""
    import jinja2

    env = jinja2.Environment(loader=_loader(), autoescape=True, undefined=jinja2.StrictUndefined, **options)
    env.filters.update(filters or {})
    env.globals.update(globals or {})
    return env
