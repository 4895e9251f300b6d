"""What a membership attack needs and does, as scikit-learn estimator tags.

scikit-learn (>= 1.6) describes an estimator by the dataclasses that its
``__sklearn_tags__()`` returns; a library adds its own tags the way imbalanced-learn
adds ``SamplerTags``: a dataclass of its own in a field of a ``Tags`` subclass. Every
attack's ``__sklearn_tags__()`` returns :class:`Tags`, whose ``membership_tags`` say
what the runners (:func:`tabmia.experiment.run_attacks`, ``tabmia audit``, ``tabmia
benchmark``) must know about it. They read these tags, never an attack's class name
or its parameter names: an attack that declares its tags runs everywhere.

A subclass sets its tags as scikit-learn's estimators do::

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.membership_tags.queries_perturbed_records = True
        return tags
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from sklearn.utils import Tags as _SklearnTags
from sklearn.utils import get_tags

__all__ = ["MembershipTags", "Tags", "membership_tags", "TARGET_OUTPUTS"]

#: What a target can expose, from the least to the most: predicted labels only,
#: probabilities, logits (:attr:`tabmia.target.TargetModel.outputs`).
TARGET_OUTPUTS: tuple[str, ...] = ("labels", "proba", "logits")


@dataclass(slots=True)
class MembershipTags:
    """What a membership attack needs from its runner and its target.

    Parameters
    ----------
    fit_includes_candidates : bool, default=False
        ``fit`` takes a pool that contains the candidates (online attacks), with
        ``known_nonmembers`` marking the public records, instead of the public
        records alone.
    queries_perturbed_records : bool, default=False
        The attack queries the target on records it makes (perturbed copies of the
        candidates): it needs a model to query, not precomputed outputs.
    target_outputs : {"labels", "proba", "logits"}, default="proba"
        The least the target must expose (:data:`TARGET_OUTPUTS`, compared with
        :attr:`tabmia.target.TargetModel.outputs`): ``"labels"`` works from predicted
        labels alone, ``"proba"`` needs probabilities, ``"logits"`` a model that gives
        logits (a torch model).
    model_recipe_params : tuple of str, default=()
        The parameters that take the unfitted training recipe of the models ``fit``
        trains (shadow or reference models). Empty when ``fit`` trains no models from
        a recipe. Without one of them set, ``fit`` clones the target.
    proxy_recipe_param : str or None, default=None
        The parameter that takes the recipe of the proxy model of the threshold goals
        that need simulated members (``"max_ppv"``, ``"max_advantage"``).
    model_count_params : tuple of str, default=()
        The parameters that count the models ``fit`` trains. More models only add to
        the population (a cache of fewer is topped up).
    train_size_param : str or None, default=None
        The parameter that takes the target's training-set size, so that the models
        ``fit`` trains see as many records as the target did; None when the attack
        trains no models, or when their size was set by the user.
    reports_model_size : bool, default=False
        After ``fit``, ``shadow_train_size_`` holds how many records each of its models
        trained on and ``shadow_size_note_`` why fewer than asked (or None).
    fpr_fallback : dict, default={}
        The parameter values that make ``fit`` aim at the smallest FPR its calibration
        records can promise instead of refusing an ``fpr`` they cannot; empty when the
        attack cannot fall back.
    runner_settings : frozenset of str, default=frozenset()
        The runner-wide settings the attack takes, each as the parameter of that name:
        among ``random_state``, ``fpr``, ``n_jobs``, ``device``, ``cache_dir``,
        ``verbose``, ``n_shadow``, ``n_reference``. A runner reports a setting that
        none of its attacks takes.
    white_box : bool, default=False
        The attack reads the fitted model itself (its trees and the counts their
        leaves store), not only its outputs: it needs the model object (``tabmia audit
        --model-file`` of a tree model), not precomputed outputs or an endpoint.
    run_params : frozenset of str, default=frozenset()
        The parameters that say how an attack runs in a game, not what it computes:
        the target and seed the runner sets per game, and ``n_jobs``, ``device``,
        ``cache_dir``, ``verbose``. The other parameters identify the attack's results.
    """

    fit_includes_candidates: bool = False
    queries_perturbed_records: bool = False
    target_outputs: str = "proba"
    model_recipe_params: tuple[str, ...] = ()
    proxy_recipe_param: str | None = None
    model_count_params: tuple[str, ...] = ()
    train_size_param: str | None = None
    reports_model_size: bool = False
    fpr_fallback: dict[str, Any] = field(default_factory=dict)
    runner_settings: frozenset[str] = frozenset()
    run_params: frozenset[str] = frozenset()
    white_box: bool = False

    @property
    def trains_models(self) -> bool:
        """``fit`` trains models from a training recipe (it needs one, or the target's)."""
        return bool(self.model_recipe_params)

    @property
    def recipe_params(self) -> tuple[str, ...]:
        """Every parameter that takes the target's training recipe (models, then proxy)."""
        proxy = () if self.proxy_recipe_param is None else (self.proxy_recipe_param,)
        return self.model_recipe_params + proxy

    def works_with(self, outputs: str) -> bool:
        """Whether a target exposing ``outputs`` (:data:`TARGET_OUTPUTS`) suffices."""
        return TARGET_OUTPUTS.index(outputs) >= TARGET_OUTPUTS.index(self.target_outputs)


@dataclass(slots=True)
class Tags(_SklearnTags):
    """scikit-learn's estimator tags plus :class:`MembershipTags`."""

    membership_tags: MembershipTags = field(default_factory=MembershipTags)

    @classmethod
    def extend(cls, tags: _SklearnTags, membership: MembershipTags) -> Tags:
        """scikit-learn's ``tags`` with ``membership`` added."""
        return cls(
            **{f.name: getattr(tags, f.name) for f in fields(_SklearnTags)},
            membership_tags=membership,
        )


def membership_tags(attack: Any) -> MembershipTags:
    """The :class:`MembershipTags` of ``attack``.

    Raises
    ------
    TypeError
        If ``attack`` is no membership attack (its tags have no ``membership_tags``).
    """
    try:
        tags = get_tags(attack)
    except (AttributeError, TypeError) as exc:
        raise TypeError(f"{attack!r} is not a membership attack: {exc}") from exc
    if not isinstance(tags, Tags):
        raise TypeError(
            f"{attack!r} is not a membership attack: its estimator tags have no "
            "membership_tags (subclass tabmia.attacks.BaseMembershipAttack)"
        )
    return tags.membership_tags
