"""Sphinx configuration of tabmia's documentation site.

Build it from the repository root with the ``docs`` extra installed::

    sphinx-build -W -b html docs docs/_build/html

The examples in ``examples/`` run during the build (sphinx-gallery) on their quick path
(``TABMIA_EXAMPLES_QUICK=1``: fewer shadow models, as each example's docstring says).
"""

from __future__ import annotations

import os
import re
import sys
import warnings
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))  # the checkout's tabmia, installed or not
sys.path.insert(0, str(DOCS / "_ext"))

# Before the examples run: their quick path, and no progress bars in the gallery's output.
os.environ.setdefault("TABMIA_EXAMPLES_QUICK", "1")
os.environ.setdefault("TQDM_DISABLE", "1")
os.environ.setdefault("MPLBACKEND", "Agg")

import tabmia  # noqa: E402 - after sys.path is set

project = "tabmia"
author = "the tabmia authors"
copyright = "2026, the tabmia authors"
release = tabmia.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.viewcode",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
    "sphinxarg.ext",
    "benchmark_pages",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_inventories", "_ext", "Thumbs.db", ".DS_Store",
                    "auto_examples/*.ipynb", "auto_examples/*.py", "auto_examples/*.zip",
                    "auto_examples/*.md5", "auto_examples/*.json"]
templates_path = ["_templates"]

# ------------------------------------------------------------------ HTML
html_theme = "furo"
html_title = f"tabmia {release}"
html_static_path = ["_static"]  # the report's pictures, and the stylesheet below
html_css_files = ["tabmia.css"]  # long code lines wrap; wide output tables scroll
html_show_sourcelink = False

# ------------------------------------------------------------------ markdown pages
myst_enable_extensions = ["colon_fence", "deflist", "dollarmath"]
myst_heading_anchors = 3
# The pages kept from docs/*.md link each other and repository files by path; a link to a
# file outside the site (a benchmark script, a test) is shown as text, not a broken link.
# The benchmark result pages are the scripts' own output, headings as they wrote them.
suppress_warnings = ["myst.xref_missing", "myst.header"]

# ------------------------------------------------------------------ API reference
autosummary_generate = True
autosummary_imported_members = True
autodoc_typehints = "none"  # numpydoc's Parameters sections carry the types
autodoc_member_order = "bysource"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = True
numpydoc_xref_param_type = False
# A docstring numpydoc cannot read is published wrong (an unknown section's text is
# dropped): its warnings fail the build. numpydoc warns with a Python UserWarning (not
# through Sphinx, so -W alone let it pass): that warning is an error here, which autodoc
# reports as a Sphinx warning, and numpydoc's own check of the sections (GL06: unknown
# section) says which section.
warnings.filterwarnings("error", category=UserWarning, module="numpydoc")
numpydoc_validation_checks = {"GL06"}
# A method without a docstring of its own is not documented with a parent's: CatBoostAuto
# would show catboost's docstrings, which are not reStructuredText.
autodoc_inherit_docstrings = False

# ------------------------------------------------------------------ intersphinx
# CI reaches only PyPI, so the inventories are files in docs/_inventories (written by
# docs/_inventories/make_inventories.py from the installed libraries, with each project's
# documented URL layout); a missing file turns its mapping off instead of a network fetch.
_INVENTORIES = {
    "sklearn": "https://scikit-learn.org/stable/",
    "numpy": "https://numpy.org/doc/stable/",
    "pandas": "https://pandas.pydata.org/docs/",
    "python": "https://docs.python.org/3/",
}
intersphinx_mapping = {
    name: (url, str(DOCS / "_inventories" / f"{name}.inv"))
    for name, url in _INVENTORIES.items()
    if (DOCS / "_inventories" / f"{name}.inv").is_file()
}
intersphinx_timeout = 1

# ------------------------------------------------------------------ gallery


def _in_data_home(loader: str) -> bool:
    """Whether an example that reads a data set can run: the data set is in the data home
    (``tabmia.datasets.<loader>``, looked up offline: CI reaches no data site, and a
    download attempt could stall the build)."""
    from tabmia import datasets
    from tabmia.exceptions import DataNotFoundError

    offline = os.environ.get("TABMIA_OFFLINE")
    os.environ["TABMIA_OFFLINE"] = "1"
    try:
        getattr(datasets, loader)()
    except DataNotFoundError:
        return False
    finally:
        if offline is None:
            del os.environ["TABMIA_OFFLINE"]
        else:
            os.environ["TABMIA_OFFLINE"] = offline
    return True


#: The examples that read a data set from the data home, and its loader.
_NEEDS_DATA_HOME = {
    "audit_german_credit": "load_german_credit",
    "audit_persons_diabetes130": "load_diabetes130",
}


# The data home of the tests and benchmarks: ../shared/data beside the checkout when it is
# there and nothing else is set (CI has it), so the examples that need data run too.
_SHARED_DATA = ROOT.parent / "shared" / "data"
if "TABMIA_DATA" not in os.environ and _SHARED_DATA.is_dir():
    os.environ["TABMIA_DATA"] = str(_SHARED_DATA)
# Every example runs, except one whose data set is not in the data home here (a fresh
# clone without ../shared): it is shown with its code, without output.
_skip = [name for name, loader in _NEEDS_DATA_HOME.items() if not _in_data_home(loader)]
sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/(?!" + "|".join(_skip) + r")[^/]*\.py$" if _skip else r"/.*\.py$",
    "download_all_examples": False,
    "remove_config_comments": True,
    "abort_on_example_error": True,
    "only_warn_on_example_error": False,
    "reset_modules": ("matplotlib", "gallery_hooks.reset_pandas"),
    # A table left as a cell's last expression (a DataFrame) is shown as an HTML table;
    # nothing else is captured from an expression.
    "capture_repr": ("_repr_html_",),
    "min_reported_time": 1,
    "write_computation_times": False,
}


_REQUEST_METHOD = re.compile(r"set_\w+_request")


def _skip_member(app: object, what: str, name: str, obj: object, skip: bool,
                 options: object) -> bool | None:
    """Document what tabmia defines: not scikit-learn's metadata-routing setters, nor the
    methods a tabmia class inherits from scikit-learn or CatBoost (their pages have them)."""
    if _REQUEST_METHOD.fullmatch(name):
        return True
    module = getattr(obj, "__module__", None)
    if callable(obj) and isinstance(module, str) and not module.startswith("tabmia"):
        return True
    return None


def _narrative(docname: str) -> bool:
    """A page written by hand (not the API reference, the gallery or the CLI reference)."""
    return not docname.startswith(("api/", "auto_examples/")) and docname != "cli"


def _strict_references(app: object, doctree: object) -> None:
    """On the hand-written pages, a Python cross-reference that resolves nowhere (neither
    the API reference nor an intersphinx inventory) is a warning, so -W fails the build:
    Sphinx would otherwise print it as plain text, silently."""
    from sphinx import addnodes

    if not _narrative(app.env.docname):  # type: ignore[attr-defined]
        return
    for node in doctree.findall(addnodes.pending_xref):  # type: ignore[attr-defined]
        if node.get("refdomain") == "py":
            node["refwarn"] = True


#: What the published output of an example must not hold: a Python warning in its
#: two-line format (``path.py:NN: SomeWarning: ...``), or a path of the build machine.
_LEAKS = {
    "a Python warning": re.compile(r"\.py:\d+: \w*Warning:"),
    "an absolute path": re.compile(r"(?<![\w.~-])(?:/work/|/home/|/tmp/|/root/|/usr/|/opt/)"
                                   r"|site-packages|dist-packages"),
}


def _example_outputs(rst: str) -> list[str]:
    """The output blocks sphinx-gallery wrote into an example's page (stdout and stderr
    as text, HTML reprs as raw HTML), without the example's code."""
    blocks = re.split(r"\n(?=\.\. )", rst)
    return [b for b in blocks
            if b.startswith((".. rst-class:: sphx-glr-script-out", ".. raw:: html"))
            or "sphx-glr-script-out" in b.split("\n", 1)[0]]


def _check_example_outputs(app: object, exception: Exception | None) -> None:
    """Fail the build when an example's published output holds a raw Python warning or
    a path of the build machine (what readers copy, and what the site shows of us)."""
    if exception is not None:
        return
    gallery = Path(app.srcdir) / "auto_examples"  # type: ignore[attr-defined]
    found = []
    for page in sorted(gallery.glob("*.rst")):
        if page.name == "index.rst":
            continue
        text = page.read_text(encoding="utf-8")
        # the output blocks follow the code they came from: ".. rst-class:: sphx-glr-script-out"
        # then an indented block; a raw HTML repr is a ".. raw:: html" block
        for block in _example_outputs(text):
            for line in block.splitlines():
                for what, pattern in _LEAKS.items():
                    if pattern.search(line):
                        found.append(f"{page.name}: {what}: {line.strip()[:160]}")
    if found:
        raise RuntimeError("published example output must not hold Python warnings or "
                           "paths of the build machine:\n  " + "\n  ".join(found))


def setup(app: object) -> None:
    """Connect the member filter, the strict references of the hand-written pages and
    the check of the examples' published output."""
    app.connect("autodoc-skip-member", _skip_member)  # type: ignore[attr-defined]
    app.connect("doctree-read", _strict_references)  # type: ignore[attr-defined]
    app.connect("build-finished", _check_example_outputs)  # type: ignore[attr-defined]
