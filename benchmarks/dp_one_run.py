"""One-run DP audit (Steinke, Nasr & Jagielski, NeurIPS 2023): sound, and how tight?

Protocol:

- **Known mechanisms** (soundness): canaries, each included with probability 1/2,
  pass through a mechanism whose privacy is exact: randomised response on the
  inclusion bit (epsilon in {1, 4}; simulated scores, and the same mechanism as a
  training recipe, :class:`tabmia.dp.RandomizedResponseClassifier`, through
  :class:`tabmia.dp.OneRunAudit` on the data set), and the Gaussian mechanism
  (mu in {1, 2}; its epsilon at delta = 1e-5 from mu). ``--runs`` audits each
  (200), with the default guesses (the best of the fixed grid, Bonferroni
  corrected): the share of runs whose bound stays at or under the truth must be at
  least 95 %.
- **DP-trained tabular models** (tightness): the data set (default Adult) is one-hot
  encoded and its numeric columns scaled to [0, 1] by an encoder fitted on a public
  split that nothing else uses (so the preprocessing leaks nothing of the training
  records); ``--canaries`` canaries (real records, label-flipped records, outliers)
  are drawn from the rest and the other records train the model once per seed.
  Models: diffprivlib's LogisticRegression (pure epsilon-DP, objective
  perturbation; audited at delta = 0) and an Opacus DP-SGD MLP (audited at its
  delta, 1e-5) at epsilon in {1, 4, 16}, and non-private models (1-NN, a random
  forest, logistic regression, the same MLP without DP). The bound / claimed
  epsilon is the tightness ratio.
- **Comparison with the membership-game bound**: tabmia's existing empirical
  epsilon (:func:`tabmia.metrics.empirical_epsilon`, Clopper-Pearson, at the loss
  attack's own 1 %-FPR threshold) on a membership game with the same recipe and
  data (:class:`tabmia.experiment.MembershipExperiment`, half the records members).

diffprivlib and Opacus are peers used here only: install them in their own venv
(``/work/venvs/dp``: ``pip install diffprivlib opacus torch==2.13.0`` and
scikit-learn 1.6, which diffprivlib 0.6.6 needs). A model whose package is missing
is skipped and said so.

Run: ``PYTHONPATH=$PWD /work/venvs/dp/bin/python -m benchmarks.dp_one_run
[--runs 200] [--seeds 3] [--quick]``.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from typing import Any, Callable

import numpy as np

from benchmarks._common import load_note, mean_std, prepare_run, write_results

NAME = "dp_one_run"
DELTA = 1e-5
CLAIMS = (1.0, 4.0, 16.0)
KINDS = ("records", "flipped", "outliers")


# ------------------------------------------------------------ known mechanisms
def known_mechanisms(runs: int, m: int, X: Any, y: Any) -> list[dict[str, Any]]:
    """Soundness on mechanisms of exactly known privacy."""
    from scipy import special

    from tabmia.dp import (
        OneRunAudit, RandomizedResponseClassifier, audit_canary_scores, gdp_epsilon,
    )

    rows = []
    for eps in (1.0, 4.0):
        rng = np.random.RandomState(int(eps))
        bounds, mus = [], []
        for run in range(runs):
            included = rng.uniform(size=m) < 0.5
            truthful = rng.uniform(size=m) < special.expit(eps)
            released = np.where(truthful, included, ~included).astype(float)
            r = audit_canary_scores(released, included, delta=0.0, random_state=run)
            bounds.append(r.epsilon_lower)
            mus.append(r.mu_lower)
        row = _mechanism_row(f"randomised response (simulated, {m} canaries)", eps, 0.0,
                             bounds, runs)
        # the mu-GDP test's epsilon is no bound for a non-Gaussian curve: shown here
        gdp = np.array([gdp_epsilon(u, DELTA) for u in mus])
        row.update({"mu_lower_mean": float(np.mean(mus)), "gdp_epsilon_mean": float(gdp.mean()),
                    "share_gdp_epsilon_at_or_under": float(np.mean(gdp <= eps + 1e-9))})
        rows.append(row)
        start = time.perf_counter()
        m_data = min(m, len(y) // 2)
        bounds = [OneRunAudit(RandomizedResponseClassifier(eps), n_canaries=m_data,
                              canaries="records", score="entropy", delta=0.0,
                              random_state=run).run(X, y).epsilon_lower
                  for run in range(runs)]
        row = _mechanism_row(f"randomised response as a recipe (OneRunAudit, {m_data} canaries)",
                             eps, 0.0, bounds, runs)
        row["seconds_per_audit"] = (time.perf_counter() - start) / runs
        rows.append(row)
    for mu in (1.0, 2.0):
        rng = np.random.RandomState(10 + int(mu))
        eps_true = gdp_epsilon(mu, DELTA)
        results = []
        for run in range(runs):
            included = rng.uniform(size=m) < 0.5
            released = mu * included + rng.normal(size=m)
            results.append(audit_canary_scores(released, included, delta=DELTA, random_state=run))
        row = _mechanism_row(f"Gaussian mechanism mu = {mu:g} (simulated, {m} canaries)", eps_true,
                             DELTA, [r.epsilon_lower for r in results], runs)
        gdp = np.array([r.epsilon_lower_gdp for r in results])
        mu_low = np.array([r.mu_lower for r in results])
        row.update({
            "mu": mu, "mu_lower_mean": float(mu_low.mean()),
            "share_mu_at_or_under": float(np.mean(mu_low <= mu)),
            "gdp_epsilon_mean": float(gdp.mean()),
            "share_gdp_epsilon_at_or_under": float(np.mean(gdp <= eps_true + 1e-9)),
        })
        rows.append(row)
    return rows


def _mechanism_row(name: str, eps: float, delta: float, bounds: list[float], runs: int) -> dict:
    b = np.asarray(bounds)
    return {
        "mechanism": name, "true_epsilon": eps, "delta": delta, "runs": runs,
        "share_at_or_under": float(np.mean(b <= eps + 1e-9)), "mean_bound": float(b.mean()),
        "p95_bound": float(np.quantile(b, 0.95)), "max_bound": float(b.max()),
        "mean_tightness": float(b.mean() / eps), "bounds": b.tolist(),
    }


# ------------------------------------------------------------------- models
class DPSGDClassifier:
    """A one-hidden-layer torch MLP trained by (DP-)SGD with Opacus; ``epsilon=None``
    trains the same network without DP. A scikit-learn style classifier."""

    def __init__(self, epsilon: float | None = None, delta: float = DELTA, hidden: int = 256,
                 epochs: int = 40, batch_size: int = 128, lr: float = 0.5,
                 max_grad_norm: float = 1.0, random_state: int | None = None) -> None:
        self.epsilon, self.delta, self.hidden, self.epochs = epsilon, delta, hidden, epochs
        self.batch_size, self.lr, self.max_grad_norm = batch_size, lr, max_grad_norm
        self.random_state = random_state

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        return {k: getattr(self, k) for k in ("epsilon", "delta", "hidden", "epochs",
                                               "batch_size", "lr", "max_grad_norm", "random_state")}

    def set_params(self, **params: Any) -> DPSGDClassifier:
        for k, v in params.items():
            setattr(self, k, v)
        return self

    def fit(self, X: Any, y: Any) -> DPSGDClassifier:
        import torch

        torch.manual_seed(0 if self.random_state is None else int(self.random_state))
        self.classes_, codes = np.unique(np.asarray(y), return_inverse=True)
        data = torch.utils.data.TensorDataset(torch.as_tensor(np.asarray(X, np.float32)),
                                              torch.as_tensor(codes, dtype=torch.long))
        loader = torch.utils.data.DataLoader(data, batch_size=self.batch_size, shuffle=True)
        net = torch.nn.Sequential(torch.nn.Linear(data.tensors[0].shape[1], self.hidden),
                                  torch.nn.ReLU(), torch.nn.Linear(self.hidden, self.classes_.size))
        optimizer = torch.optim.SGD(net.parameters(), lr=self.lr)
        if self.epsilon is not None:
            import warnings

            from opacus import PrivacyEngine

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                engine = PrivacyEngine(accountant="prv")
                net, optimizer, loader = engine.make_private_with_epsilon(
                    module=net, optimizer=optimizer, data_loader=loader,
                    target_epsilon=self.epsilon, target_delta=self.delta, epochs=self.epochs,
                    max_grad_norm=self.max_grad_norm,
                )
        loss_fn = torch.nn.CrossEntropyLoss()
        net.train()
        for _ in range(self.epochs):
            for xb, yb in loader:
                if len(xb) == 0:
                    continue
                optimizer.zero_grad()
                loss_fn(net(xb), yb).backward()
                optimizer.step()
        self.net_ = net
        return self

    def predict_proba(self, X: Any) -> np.ndarray:
        import torch

        with torch.no_grad():
            logits = self.net_(torch.as_tensor(np.asarray(X, np.float32)))
        return torch.softmax(logits, dim=1).numpy().astype(np.float64)

    def predict(self, X: Any) -> np.ndarray:
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]


def model_specs(n_features: int, quick: bool) -> list[tuple[str, float | None, float, Callable]]:
    """``(name, claimed epsilon or None, delta audited at, factory(seed))``; a model whose
    package is missing comes back with factory None."""
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.neighbors import KNeighborsClassifier

    # wide and long enough to memorise without DP; DP-SGD's clipped steps take lr 0.5,
    # the plain network diverges there and trains at 0.1
    mlp = {"hidden": 32, "epochs": 3} if quick else {"hidden": 256, "epochs": 40}
    norm = math.sqrt(n_features)  # every encoded feature is in [0, 1]
    specs: list[tuple[str, float | None, float, Any]] = []
    try:  # diffprivlib 0.6.6 with tabmia's shim for scikit-learn >= 1.8 (tabmia.whatif)
        from tabmia.whatif._diffprivlib import LogisticRegression as DPLogisticRegression
    except ImportError:
        DPLogisticRegression = None
    try:
        import opacus  # noqa: F401
    except ImportError:
        opacus = None
    for eps in CLAIMS:
        specs.append((
            f"diffprivlib LR eps={eps:g}", eps, 0.0,
            None if DPLogisticRegression is None else
            (lambda s, e=eps: DPLogisticRegression(epsilon=e, data_norm=norm, max_iter=1000,
                                                   random_state=s)),
        ))
    for eps in CLAIMS:
        specs.append((
            f"Opacus DP-SGD MLP eps={eps:g}", eps, DELTA,
            None if opacus is None else
            (lambda s, e=eps: DPSGDClassifier(epsilon=e, random_state=s, **mlp)),
        ))
    specs += [
        ("1-NN (not private)", None, DELTA, lambda s: KNeighborsClassifier(1)),
        ("random forest (not private)", None, DELTA,
         lambda s: RandomForestClassifier(n_estimators=50 if quick else 100, n_jobs=1,
                                          random_state=s)),
        ("logistic regression (not private)", None, DELTA,
         lambda s: LogisticRegression(max_iter=2000)),
        ("MLP as Opacus's, no DP (lr 0.1)", None, DELTA,
         (None if opacus is None and not _has_torch() else
          lambda s: DPSGDClassifier(epsilon=None, lr=0.1, random_state=s, **mlp))),
    ]
    return specs


def _has_torch() -> bool:
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


def encoded_data(name: str, max_records: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, dict]:
    """The data set as a [0, 1] matrix from an encoder fitted on a public split only."""
    import pandas as pd
    from sklearn.compose import ColumnTransformer, make_column_selector
    from sklearn.impute import SimpleImputer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import MinMaxScaler, OneHotEncoder

    from tabmia.datasets import load_dataset

    bunch = load_dataset(name)
    X, y = bunch.data, np.asarray(bunch.target)
    if not isinstance(X, pd.DataFrame):
        X = pd.DataFrame(np.asarray(X))
    rng = np.random.RandomState(seed)
    n_public = min(1000, len(y) // 5)
    order = rng.permutation(len(y))[: max_records + n_public]
    public, rest = order[:n_public], order[n_public:]
    encoder = ColumnTransformer([
        ("categorical", OneHotEncoder(handle_unknown="ignore", sparse_output=False,
                                      min_frequency=10),
         make_column_selector(dtype_include=["category", "object", "string"])),
        ("numeric", make_pipeline(SimpleImputer(), MinMaxScaler(clip=True)),
         make_column_selector(dtype_include="number")),
    ], sparse_threshold=0.0)
    encoder.fit(X.iloc[public])
    Z = encoder.transform(X.iloc[rest]).astype(np.float64)
    info = {"dataset": name, "records": int(len(rest)), "public_records_for_encoder": int(n_public),
            "encoded_features": int(Z.shape[1])}
    return Z, y[rest], info


def audit_models(X: np.ndarray, y: np.ndarray, seeds: int, m: int, quick: bool) -> dict[str, Any]:
    from tabmia.attacks import LossAttack
    from tabmia.dp import OneRunAudit
    from tabmia.experiment import MembershipExperiment

    rows, skipped = [], {}
    for name, claim, delta, factory in model_specs(X.shape[1], quick):
        if factory is None:
            skipped[name] = "package not installed"
            print(f"{name}: skipped (package not installed)", file=sys.stderr, flush=True)
            continue
        for kind in KINDS:
            for seed in range(seeds):
                start = time.perf_counter()
                result = OneRunAudit(factory(seed), n_canaries=m, canaries=kind, delta=delta,
                                     claimed_epsilon=claim, random_state=seed).run(X, y)
                rows.append({
                    "model": name, "claimed_epsilon": claim, "delta": delta, "canaries": kind,
                    "seed": seed, "epsilon_lower": result.epsilon_lower,
                    "tightness": result.tightness, "accuracy": result.accuracy,
                    "n_guesses": result.n_guesses, "n_correct": result.n_correct,
                    "k_plus": result.k_plus, "k_minus": result.k_minus,
                    "mu_lower": result.mu_lower, "epsilon_lower_gdp": result.epsilon_lower_gdp,
                    "train_accuracy": result.context["train accuracy"],
                    "seconds": time.perf_counter() - start,
                })
                print(f"{name} {kind} seed {seed}: eps >= {result.epsilon_lower:.3f} "
                      f"({result.n_correct}/{result.n_guesses})", file=sys.stderr, flush=True)
        for seed in range(seeds):
            game = MembershipExperiment(
                _Recipe(factory, seed), {"loss": LossAttack(None)}, train_size=0.5,
                public_size=0.5, random_state=seed,
            ).run(X, y).with_delta(delta)
            metrics = game.metrics.iloc[0]
            rows.append({
                "model": name, "claimed_epsilon": claim, "delta": delta,
                "canaries": "membership game", "seed": seed,
                "epsilon_lower": float(metrics["epsilon_lower"]),
                "tightness": (float(metrics["epsilon_lower"]) / claim) if claim else None,
                "tp": int(metrics["tp"]), "fp": int(metrics["fp"]),
                "n_members": int(metrics["n_members"]), "n_nonmembers": int(metrics["n_nonmembers"]),
            })
    return {"rows": rows, "skipped": skipped}


class _Recipe:
    """A factory's estimator with the scikit-learn clone protocol, for the game."""

    def __init__(self, factory: Callable, seed: int) -> None:
        self.factory, self.seed = factory, seed

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        return {"factory": self.factory, "seed": self.seed}

    def set_params(self, **params: Any) -> _Recipe:
        for k, v in params.items():
            setattr(self, k, v)
        return self

    def fit(self, X: Any, y: Any) -> _Recipe:
        self.model_ = self.factory(self.seed).fit(X, y)
        self.classes_ = self.model_.classes_
        return self

    def predict_proba(self, X: Any) -> np.ndarray:
        return self.model_.predict_proba(X)

    def predict(self, X: Any) -> np.ndarray:
        return self.model_.predict(X)


# ------------------------------------------------------------------ reporting
def _markdown(mech: list[dict], models: dict, settings: dict, load: dict) -> str:
    peers = ", ".join(f"{k} {v or 'not installed'}" for k, v in settings["peers"].items())
    out = [f"Peers: {peers}. Wall time {settings['wall_seconds']:.0f} s.\n",
           "## Soundness on mechanisms of known privacy\n",
           f"{settings['runs']} audits each; default guesses (best of the fixed grid, "
           "Bonferroni corrected), 95 % confidence.\n",
           "| mechanism | true epsilon | delta | bound <= truth | mean bound | 95th pct | max | "
           "mean bound / truth |", "|---|---|---|---|---|---|---|---|"]
    for r in mech:
        out.append(f"| {r['mechanism']} | {r['true_epsilon']:.3f} | {r['delta']:g} | "
                   f"{100 * r['share_at_or_under']:.1f} % | {r['mean_bound']:.3f} | "
                   f"{r['p95_bound']:.3f} | {r['max_bound']:.3f} | {r['mean_tightness']:.3f} |")
    gauss = [r for r in mech if "gdp_epsilon_mean" in r]
    if gauss:
        out += ["", "The mu-GDP test (Mahloujifar et al.): its mu bound, and the epsilon at "
                f"delta = {DELTA:g} of that mu, against the true epsilon at that delta. Sound "
                "for the Gaussian mechanism; randomised response is not Gaussian, and there "
                "the epsilon read off the mu bound overshoots the truth (why the verdict never "
                "uses it).", "",
                "| mechanism | mu | mean mu lower bound | mu bound <= mu | mean epsilon from it | "
                "that epsilon <= truth | Steinke bound (mean) |", "|---|---|---|---|---|---|---|"]
        for r in gauss:
            mu, share_mu = r.get("mu"), r.get("share_mu_at_or_under")
            out.append(f"| {r['mechanism']} | {'-' if mu is None else f'{mu:g}'} | "
                       f"{r['mu_lower_mean']:.3f} | "
                       f"{'-' if share_mu is None else f'{100 * share_mu:.1f} %'} | "
                       f"{r['gdp_epsilon_mean']:.3f} | "
                       f"{100 * r['share_gdp_epsilon_at_or_under']:.1f} % | {r['mean_bound']:.3f} |")
    rows = models["rows"]
    out += ["", "## DP-trained tabular models\n",
            f"Data: {settings['data']['dataset']} ({settings['data']['records']} records, "
            f"{settings['data']['encoded_features']} encoded features, encoder fitted on "
            f"{settings['data']['public_records_for_encoder']} other records); "
            f"{settings['canaries']} canaries; seeds {settings['seeds']}. One-run bound at 95 % "
            "confidence: mean ± std over seeds (max); tightness = bound / claimed epsilon. "
            "Membership game: tabmia's empirical epsilon (Clopper-Pearson, loss attack at its "
            "own 1 %-FPR threshold), half the records members.\n",
            "| model | delta | canaries | epsilon lower bound | max | tightness | guess accuracy | "
            "mu lower bound |", "|---|---|---|---|---|---|---|---|"]
    for model in dict.fromkeys(r["model"] for r in rows):
        for kind in (*KINDS, "membership game"):
            cell = [r for r in rows if r["model"] == model and r["canaries"] == kind]
            if not cell:
                continue
            eps = [r["epsilon_lower"] for r in cell]
            tight = [r["tightness"] for r in cell if r["tightness"] is not None]
            acc = mean_std([r.get("accuracy") for r in cell]) if kind != "membership game" else \
                f"TP {sum(r['tp'] for r in cell)}, FP {sum(r['fp'] for r in cell)}"
            mu = mean_std([r.get("mu_lower") for r in cell]) if kind != "membership game" else "-"
            out.append(f"| {model} | {cell[0]['delta']:g} | {kind} | {mean_std(eps)} | "
                       f"{max(eps):.3f} | {mean_std(tight) if tight else '-'} | {acc} | {mu} |")
    out += ["", "## Checks\n"] + [f"- {line}" for line in _checks(mech, rows)]
    if models["skipped"]:
        out.append("\nSkipped: " + "; ".join(f"{k} ({v})" for k, v in models["skipped"].items()))
    return "\n".join(out) + load_note(load)


def _checks(mech: list[dict], rows: list[dict]) -> list[str]:
    lines = []
    for r in mech:
        ok = r["share_at_or_under"] >= 0.95
        lines.append(f"{'PASS' if ok else 'FAIL'}: {r['mechanism']}, bound <= true epsilon in "
                     f"{100 * r['share_at_or_under']:.1f} % of {r['runs']} runs (needs >= 95 %)")
    audits = [r for r in rows if r["canaries"] != "membership game"]
    dp = [r for r in audits if r["claimed_epsilon"] is not None]
    over = [r for r in dp if r["epsilon_lower"] > r["claimed_epsilon"]]
    lines.append(f"{'PASS' if not over else 'FAIL'}: no one-run bound on a DP model exceeds its "
                 f"claimed epsilon ({len(dp)} audits, {len(over)} over)")
    for family in ("diffprivlib LR", "Opacus DP-SGD MLP"):
        best = []
        for eps in CLAIMS:
            cell = [r["epsilon_lower"] for r in dp
                    if r["model"] == f"{family} eps={eps:g}"]
            if cell:
                kind_means = {k: np.mean([r["epsilon_lower"] for r in dp if r["canaries"] == k
                                          and r["model"] == f"{family} eps={eps:g}"])
                              for k in KINDS}
                best.append(max(kind_means.values()))
        if len(best) == len(CLAIMS):
            grows = all(b2 >= b1 for b1, b2 in zip(best, best[1:])) and best[-1] > best[0]
            lines.append(f"{'PASS' if grows else 'FAIL'}: {family}: the best canaries' mean bound "
                         f"grows with epsilon ({', '.join(f'{b:.3f}' for b in best)} at "
                         f"{', '.join(f'{e:g}' for e in CLAIMS)})")
    for model in ("1-NN (not private)", "random forest (not private)"):
        cell = [r["epsilon_lower"] for r in audits if r["model"] == model]
        if cell:
            lines.append(f"{'PASS' if max(cell) > 1.0 else 'FAIL'}: {model}: largest bound "
                         f"{max(cell):.3f} (clearly positive: > 1)")
    by_kind = {k: np.mean([r["epsilon_lower"] for r in audits if r["canaries"] == k]) for k in KINDS}
    best_kind = max(by_kind, key=by_kind.get)
    lines.append("Canaries, mean bound over all models and seeds: "
                 + ", ".join(f"{k} {v:.3f}" for k, v in by_kind.items())
                 + f"; tightest: {best_kind}")
    return lines


def _peer_versions() -> dict[str, str | None]:
    import importlib.metadata

    out: dict[str, str | None] = {}
    for dist in ("diffprivlib", "opacus"):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            out[dist] = None
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=200, help="audits per known mechanism")
    parser.add_argument("--seeds", type=int, default=3, help="training runs per model and canaries")
    parser.add_argument("--canaries", type=int, default=1000, help="canaries per audit")
    parser.add_argument("--dataset", default="adult", help="tabmia data set name")
    parser.add_argument("--max-records", type=int, default=2000,
                        help="records audited (canaries included), after the encoder's")
    parser.add_argument("--quick", action="store_true", help="smoke run: tiny sizes")
    parser.add_argument("--out", default=None, help="results folder (default benchmarks/results)")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    args = parser.parse_args(argv)
    if args.quick:
        args.runs, args.seeds, args.canaries = min(args.runs, 20), 1, min(args.canaries, 100)
        args.max_records = min(args.max_records, 400)
    prepare_run(args)
    load = {"start": os.getloadavg()}
    start = time.perf_counter()
    X, y, data_info = encoded_data(args.dataset, args.max_records)
    mech = known_mechanisms(args.runs, args.canaries, X, y)
    models = audit_models(X, y, args.seeds, args.canaries, args.quick)
    load["end"] = os.getloadavg()
    settings = {"runs": args.runs, "seeds": list(range(args.seeds)), "canaries": args.canaries,
                "confidence": 0.95, "guesses": "bonferroni", "data": data_info,
                "quick": args.quick, "wall_seconds": time.perf_counter() - start,
                "peers": _peer_versions()}
    payload = {"settings": settings, "load": load, "known_mechanisms": mech, "models": models}
    write_results(NAME, payload, _markdown(mech, models, settings, load))
    return 0


if __name__ == "__main__":
    sys.exit(main())
