"""Hooks of the example gallery (sphinx-gallery), named in ``sphinx_gallery_conf`` by
their import path so that the configuration stays picklable."""

from __future__ import annotations

from typing import Any


def reset_pandas(gallery_conf: dict[str, Any], fname: Any, when: str) -> None:
    """Show an example's tables whole: a DataFrame left as a cell's last expression is
    published as an HTML table, whose cells pandas would otherwise cut at 50 characters
    (an interval with its "not resolved by N non-members" note) and whose columns it
    would elide past 20."""
    import pandas as pd

    pd.set_option("display.max_colwidth", None)
    pd.set_option("display.max_columns", None)
    pd.set_option("display.width", None)
