"""The reference-model attacks share one base class and import no other attack module."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.tree import DecisionTreeClassifier

import tabmia.attacks
from tabmia.attacks import CalibratedAttack, LiRAAttack, RMIAAttack
from tabmia.attacks._reference import ReferenceModelAttack

ATTACKS_DIR = Path(tabmia.attacks.__file__).parent
#: modules of tabmia/attacks/ that hold no attack: any attack module may import them
BASES = {"tabmia.attacks.base", "tabmia.attacks._reference", "tabmia.attacks._tags",
         "tabmia.attacks._docs"}


def _imported_modules(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
    return out


@pytest.mark.parametrize(
    "path", sorted(p for p in ATTACKS_DIR.glob("*.py") if p.name != "__init__.py"),
    ids=lambda p: p.name,
)
def test_no_attack_module_imports_another(path):
    own = f"tabmia.attacks.{path.stem}"
    helpers = f"tabmia.attacks._{path.stem}_"  # an attack's own private modules
    others = {
        m for m in _imported_modules(path)
        if m.startswith("tabmia.attacks.") and m not in BASES and m != own
        and not m.startswith(helpers)
    }
    assert not others, f"{path.name} imports attack modules {sorted(others)}"


@pytest.mark.parametrize("cls", [LiRAAttack, RMIAAttack, CalibratedAttack])
def test_reference_attacks_share_the_base_parameters(cls):
    assert issubclass(cls, ReferenceModelAttack)
    for name in ("calibration_share", "shadow_train_size", "n_jobs", "cache_dir", "verbose"):
        assert cls._parameter_constraints[name] is ReferenceModelAttack._parameter_constraints[name]
        assert name in cls().get_params()


def test_candidates_outside_the_pool_are_scored_by_as_many_models_as_a_pool_record():
    X, y = make_classification(n_samples=300, n_features=5, random_state=0)
    target = DecisionTreeClassifier(max_depth=4, random_state=0).fit(X[:100], y[:100])
    X_pub, y_pub = X[100:], y[100:]
    attack = RMIAAttack(target, n_reference=4, a=0.5, random_state=0).fit(X_pub, y_pub)
    # every public record trained references and calibrates, scored by its OUT ones
    assert attack.calibration_index_.size == 0
    assert attack.n_calibration_ == y_pub.size
    pool = np.arange(10)
    pool_mom, found = attack._candidate_moments(X_pub[pool], y_pub[pool])
    assert found.all()
    stats = attack.population_.statistics_[:, :10].astype(np.float64)
    out = ~attack.in_masks_[:, :10]
    np.testing.assert_allclose(pool_mom["mu_out"], (stats * out).sum(0) / out.sum(0))
    np.testing.assert_array_equal(pool_mom["c_out"], out.sum(0))
    np.testing.assert_array_equal(attack.out_model_masks(X_pub[:10], y_pub[:10]), out)
    # a fresh record: one OUT model of each complementary pair, as for a pool record
    fresh = attack.out_model_masks(X[:50], y[:50])
    assert (fresh[0] != fresh[1]).all() and (fresh[2] != fresh[3]).all()
    assert 0 < fresh[0].mean() < 1  # which one differs from record to record
    fresh_mom, found = attack._candidate_moments(X[:50], y[:50])
    assert not found.any() and (fresh_mom["c_out"] == 2).all()
    every = attack.population_.statistics(X[:50], y[:50]).astype(np.float64)
    np.testing.assert_allclose(fresh_mom["mu_out"], (every * fresh).sum(0) / 2)
    # the set is a function of the record: alone or among others, the same
    np.testing.assert_array_equal(attack.out_model_masks(X[7:8], y[7:8]), fresh[:, 7:8])


def test_one_model_cannot_score_every_record_by_an_out_model():
    X, y = make_classification(n_samples=300, n_features=5, random_state=0)
    target = DecisionTreeClassifier(max_depth=4, random_state=0).fit(X[:100], y[:100])
    with pytest.raises(ValueError, match="calibration_share > 0"):
        CalibratedAttack(target, n_reference=1, fpr=0.05).fit(X[100:], y[100:])
    # held-out calibration records are scored by the single model, like every candidate
    a = CalibratedAttack(target, n_reference=1, fpr=0.05, calibration_share=0.5,
                         random_state=0).fit(X[100:], y[100:])
    assert a.n_calibration_ == 100 and np.isfinite(a.decision_function(X[:50], y[:50])).all()
