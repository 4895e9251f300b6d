"""Training sets rebuilt from a tree model's own file (issue 49, item 4).

A scikit-learn decision tree, or a forest trained without bootstrap, stores per node how
many training records reached it and per leaf how many of each class. With OR-Tools'
CP-SAT solver those counts give the training set back, at the resolution of the model's
thresholds (Ferry, Fukasawa, Pascal & Vidal, ICML 2024). One module per job:
``_forest`` reads the stored counts, ``_bins`` the feature space the trees split, ``_solver``
the constraint program, ``_matching`` compares with the true training set, ``result``
holds the outcome and its sentence, ``reconstruct`` is the entry point. OR-Tools is
imported only when a reconstruction runs (``pip install 'tabmia[reconstruct]'``).
"""

from tabmia.reconstruction._forest import unsupported_reason
from tabmia.reconstruction.reconstruct import reconstruct_training_set
from tabmia.reconstruction.result import ReconstructionResult

__all__ = [
    "reconstruct_training_set",
    "ReconstructionResult",
    "may_be_reconstructible",
    "unsupported_reason",
]


def may_be_reconstructible(model: object) -> bool:
    """Whether ``model`` is a tree model whose file the reconstruction reads and that
    saw every training record once per tree: a fitted scikit-learn decision tree, or a
    random / extra-trees forest without bootstrap (bare or last in a Pipeline).

    Bagged forests are False here (:func:`reconstruct_training_set` still tries them).
    """
    if unsupported_reason(model) is not None:
        return False
    from tabmia.reconstruction._forest import split_model

    return not getattr(split_model(model)[1], "bootstrap", False)
