"""One documentation page per benchmark result (``benchmarks/results/<name>.md``).

The results are written by the benchmark scripts and committed beside them; the site shows
them as they are. Before Sphinx reads the sources, this writes a stub page per result
under ``docs/benchmarks/results/`` that includes the file and shows its figures
(``<name>_*.png``: ROC curves, frontiers), so a new result gets its page without editing
the docs. The result files name their figures in text, not as markdown images: an image
path in an included file would resolve against the stub's folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sphinx.application import Sphinx

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results"


def result_names(results: Path = RESULTS) -> list[str]:
    """The benchmark results that get a page: every ``<name>.md`` under ``results``."""
    return sorted(p.stem for p in results.glob("*.md"))


def _stub(name: str, out: Path) -> str:
    rel = Path("..", "..", "..", "benchmarks", "results")  # from docs/benchmarks/results/
    lines = [f"```{{include}} {rel / (name + '.md')}", "```", ""]
    figures = sorted(RESULTS.glob(f"{name}_*.png"))
    if figures:
        lines += ["## Figures", ""]
        for fig in figures:
            lines += [f"```{{image}} {rel / fig.name}", f":alt: {fig.stem}", ":width: 80%",
                      "```", ""]
    return "\n".join(lines)


def write_pages(app: Sphinx) -> None:
    """Write the stub pages (only those whose text changed, so rebuilds stay incremental)."""
    out = Path(app.srcdir) / "benchmarks" / "results"
    out.mkdir(parents=True, exist_ok=True)
    names = result_names()
    for stale in out.glob("*.md"):
        if stale.stem not in names:
            stale.unlink()
    for name in names:
        page, text = out / f"{name}.md", _stub(name, out)
        if not page.is_file() or page.read_text() != text:
            page.write_text(text)


def setup(app: Sphinx) -> dict[str, Any]:
    """Register the page writer (Sphinx extension entry point)."""
    app.connect("builder-inited", write_pages)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
