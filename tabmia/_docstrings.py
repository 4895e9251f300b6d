"""Docstring sections written once and shared, as imbalanced-learn's ``Substitution``.

A class or function whose docstring holds a placeholder line such as ``    {fpr}``
gets the shared text there, indented like the placeholder, when it is decorated with
``@Substitution(fpr=TEXT)``. Only lines that are a placeholder alone are replaced:
other braces (numpydoc's ``{"fpr", "max_ppv"}`` type sets) are left as written, so
docstrings need no doubled braces. One ``Substitution`` holding a family's shared texts
decorates every member of it; each docstring names the ones it uses. The rendered
``__doc__`` is what ``help()``, numpydoc and Sphinx read, so every parameter still
stands in every docstring.
"""

from __future__ import annotations

import inspect
import re
from typing import TypeVar

__all__ = ["Substitution"]

_T = TypeVar("_T")

#: A line that is a placeholder alone: ``{name}``, indented.
_PLACEHOLDER_LINE = re.compile(r"^([ \t]*)\{([A-Za-z_][A-Za-z0-9_]*)\}[ \t]*$", re.M)


class Substitution:
    """Decorator that fills named ``{placeholder}`` lines of a docstring.

    Parameters
    ----------
    **texts : str
        Text of each placeholder. A text may span several lines, written flush left
        (:func:`inspect.cleandoc` is applied): each line after the first is indented
        like the placeholder line.

    Raises
    ------
    ValueError
        When a placeholder line of the decorated docstring names no text (a misspelt
        name would otherwise be published as ``{name}``).
    """

    def __init__(self, **texts: str) -> None:
        self.texts = {name: inspect.cleandoc(text) for name, text in texts.items()}

    def __call__(self, obj: _T) -> _T:
        doc = obj.__doc__
        if doc is None:  # python -OO strips docstrings: nothing to fill
            return obj
        unknown = sorted({m.group(2) for m in _PLACEHOLDER_LINE.finditer(doc)} - set(self.texts))
        if unknown:
            raise ValueError(
                f"{getattr(obj, '__qualname__', obj)}: its docstring has the placeholder "
                f"{{{unknown[0]}}}, which Substitution has no text for (it has: "
                f"{', '.join(sorted(self.texts))})"
            )
        obj.__doc__ = _PLACEHOLDER_LINE.sub(self._fill, doc)
        return obj

    def _fill(self, match: re.Match[str]) -> str:
        indent, name = match.group(1), match.group(2)
        return "\n".join(indent + line if line else "" for line in self.texts[name].splitlines())
