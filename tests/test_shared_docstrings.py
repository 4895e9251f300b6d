"""Shared parameter docstrings (``tabmia._docstrings.Substitution``) render in full."""

from __future__ import annotations

import inspect
import re
import warnings

import pytest
from numpydoc.docscrape import NumpyDocString

import tabmia.attacks as attacks
from tabmia._docstrings import Substitution

ATTACKS = [
    getattr(attacks, name)
    for name in attacks.__all__
    if isinstance(getattr(attacks, name), type)
    and issubclass(getattr(attacks, name), attacks.BaseMembershipAttack)
    and name != "BaseMembershipAttack"
]


def test_substitution_fills_a_placeholder_at_its_indentation_and_leaves_other_braces():
    @Substitution(fpr="fpr : float\n    FPR promised.")
    def f() -> None:
        """Do it.

        Parameters
        ----------
        {fpr}
        goal : {"fpr", "max_ppv"}
            Goal.
        """

    assert "    fpr : float\n        FPR promised.\n" in f.__doc__
    assert 'goal : {"fpr", "max_ppv"}' in f.__doc__


def test_substitution_refuses_a_placeholder_it_has_no_text_for():
    with pytest.raises(ValueError, match=r"placeholder \{fpx\}.*it has: fpr"):

        @Substitution(fpr="fpr : float")
        def f() -> None:
            """Do it.

            {fpx}
            """


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda c: c.__name__)
def test_every_attack_docstring_lists_every_parameter(attack):
    doc = attack.__doc__
    assert not re.search(r"^\s*\{\w+\}\s*$", doc, re.M), "a placeholder was left unfilled"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpydoc warns on a section it cannot read
        parsed = NumpyDocString(inspect.cleandoc(doc))
    documented = {name.strip() for p in parsed["Parameters"] for name in p.name.split(",")}
    params = set(inspect.signature(attack.__init__).parameters) - {"self", "legacy"}
    assert params <= documented, f"undocumented: {sorted(params - documented)}"
