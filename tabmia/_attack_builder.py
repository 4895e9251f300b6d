"""Attacks from their command-line specs, shared by ``tabmia audit`` and ``tabmia benchmark``.

A spec is a preset name of :mod:`tabmia.recipes` with optional parameters,
``name[:param=value[:param=value ...]]``, e.g. ``lira:n_shadow=64`` or
``quantile:mode=pinball``. Values are read as int, float, ``true`` / ``false`` /
``none`` or else kept as text; each parameter must be one the attack takes, and its
value is checked against the attack's parameter constraints up front.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AttackSpec",
    "parse_attack_spec",
    "build_attack",
    "build_attacks",
    "settings_not_taken",
    "unused_settings_note",
]

# parameters the runner owns: a spec may not set them
_RESERVED = ("target",)


class AttackSpec:
    """One parsed attack spec: the preset name and the parameters the user gave.

    Parameters
    ----------
    text : str
        The spec as typed; it names the attack's column in result tables.
    name : str
        Preset name (one of :data:`tabmia.recipes.ATTACK_PRESETS`).
    params : dict
        Parameters given in the spec.
    """

    def __init__(self, text: str, name: str, params: dict[str, Any]) -> None:
        self.text = text
        self.name = name
        self.params = params

    @property
    def canonical(self) -> str:
        """Name plus the parameters in sorted order (the same attack, however written)."""
        return ":".join([self.name] + [f"{k}={self.params[k]!r}" for k in sorted(self.params)])

    def __repr__(self) -> str:
        return f"AttackSpec({self.text!r})"


def _value(text: str) -> Any:
    low = text.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("none", "null"):
        return None
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text.strip()


def parse_attack_spec(text: str) -> AttackSpec:
    """Parse ``name[:param=value ...]``; raises ValueError naming what is wrong."""
    from tabmia.recipes import ATTACK_PRESETS

    text = str(text).strip()
    name, *parts = text.split(":")
    name = name.strip()
    if name not in ATTACK_PRESETS:
        raise ValueError(f"unknown attack {name!r}; choose from {', '.join(ATTACK_PRESETS)}")
    params: dict[str, Any] = {}
    for part in parts:
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ValueError(f"attack spec {text!r}: expected param=value after ':', got {part!r}")
        if key in params:
            raise ValueError(f"attack spec {text!r}: {key} given twice")
        params[key] = _value(value)
    return AttackSpec(text, name, params)


def build_attack(spec: str | AttackSpec, *, fast: bool = False, **settings: Any) -> Any:
    """Unfitted attack for ``spec``.

    Parameters
    ----------
    spec : str or AttackSpec
        ``name[:param=value ...]``.
    fast : bool, default=False
        Apply the attack's quick settings (few shadow models, small regressors) under
        the spec's own parameters.
    **settings
        Runner-wide settings, each set where the attack takes it (its
        :class:`~tabmia.attacks.MembershipTags`): those of ``runner_settings`` (``fpr``,
        ``n_jobs``, ``device``, ``n_shadow``, ...), and ``recipe``, the unfitted
        training recipe, for every parameter that takes one (``recipe_params``). The
        spec's parameters win over them. Which of them no attack takes:
        :func:`settings_not_taken`.

    Raises
    ------
    ValueError
        For an unknown attack or parameter, or a value the attack refuses.
    """
    from sklearn.utils._param_validation import InvalidParameterError

    from tabmia.attacks import membership_tags
    from tabmia.recipes import make_attack

    spec = parse_attack_spec(spec) if isinstance(spec, str) else spec
    attack = make_attack(spec.name)
    valid = attack.get_params(deep=False)
    bad = [k for k in spec.params if k not in valid or k in _RESERVED]
    if bad:
        takes = ", ".join(k for k in sorted(valid) if k not in _RESERVED)
        raise ValueError(
            f"attack spec {spec.text!r}: {spec.name} takes no parameter "
            f"{', '.join(bad)} (it takes: {takes})"
        )
    attack.set_params(**_runner_params(membership_tags(attack), settings))
    if fast:
        attack.set_params(**{k: v for k, v in type(attack)._fast_params().items() if k in valid})
    attack.set_params(**spec.params)
    try:
        attack._validate_params()
    except InvalidParameterError as exc:
        raise ValueError(f"attack spec {spec.text!r}: {exc}") from exc
    return attack


def _runner_params(tags: Any, settings: dict[str, Any]) -> dict[str, Any]:
    """The parameters that the runner-wide ``settings`` set on an attack with ``tags``."""
    params = {k: v for k, v in settings.items() if k in tags.runner_settings}
    if settings.get("recipe") is not None:
        params.update(dict.fromkeys(tags.recipe_params, settings["recipe"]))
    return params


def build_attacks(specs: str | list[str], *, fast: bool = False, **settings: Any) -> dict[str, Any]:
    """``{spec text: unfitted attack}`` for a comma-separated list (or a list) of specs."""
    if isinstance(specs, str):
        specs = specs.split(",")
    texts = [s.strip() for s in specs if str(s).strip()]
    if not texts:
        raise ValueError("no attack given")
    dup = sorted({t for t in texts if texts.count(t) > 1})
    if dup:
        raise ValueError(f"attack {dup[0]!r} given twice")
    return {t: build_attack(t, fast=fast, **settings) for t in texts}


def settings_not_taken(attacks: dict[str, Any], settings: list[str] | tuple[str, ...]) -> list[str]:
    """The runner settings among ``settings`` that no attack in ``attacks`` takes.

    :func:`build_attack` sets a runner-wide setting only where an attack takes it (the
    ``runner_settings`` of its :class:`~tabmia.attacks.MembershipTags`); the command
    lines report the ones that none of the chosen attacks uses instead of dropping
    them without a word.

    Parameters
    ----------
    attacks : dict
        ``{spec text: attack}``, as :func:`build_attacks` returns.
    settings : sequence of str
        Settings the user gave (``"n_jobs"``, ``"device"``, ...).

    Returns
    -------
    list of str
        Those of ``settings`` no attack takes, in their order.
    """
    from tabmia.attacks import membership_tags

    taken = set().union(*(membership_tags(a).runner_settings for a in attacks.values()))
    return [s for s in settings if s not in taken]


def unused_settings_note(
    attacks: dict[str, Any], given: dict[str, str], *, model_takes_device: bool = False
) -> str | None:
    """The note naming the runner settings that nothing uses, or None.

    Parameters
    ----------
    attacks : dict
        ``{spec text: attack}``.
    given : dict
        ``{setting: how the user wrote it}`` for the settings the user gave, e.g.
        ``{"n_jobs": "--n-jobs 2"}``.
    model_takes_device : bool, default=False
        The target (and so its shadow / reference models) runs on a device: ``device``
        is used even where no attack takes it.
    """
    unused = settings_not_taken(attacks, list(given))
    if model_takes_device and "device" in unused:
        unused.remove("device")
    if not unused:
        return None
    return (
        f"{', '.join(given[k] for k in unused)}: not used by the chosen attacks "
        f"({', '.join(attacks)})" + (" nor by the model" if "device" in unused else "")
    )
