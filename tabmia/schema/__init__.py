"""The evidence file: the published JSON Schema of ``results.json``, and its checks.

``tabmia audit`` writes ``results.json``; this package holds the JSON Schema that says
what each of its fields means (``results.v2.schema.json``, the file's
``schema_version`` 2) and every earlier version (``results.v1.schema.json``: the files
written before the version was recorded, which have no ``schema_version``), so that old
results stay readable. Version 2 adds, beside the audit's tables:

- ``rates``: every rate with its unit (record / person), its 95% interval and method,
  and for the attacker's own threshold the FPR promised and delivered;
- ``attacker``: what the modelled attacker sees (probabilities, labels, white-box) and
  which public data it holds, per attack the models it trains on them;
- ``coverage``: the tests a regulator's checklist names (membership per record and per
  person, attribute inference, reconstruction, a DP claim), each run or not run, with
  the reason.

:func:`validate_results` checks a payload against the schema of its own version
(``jsonschema``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tabmia.schema._evidence import CHECKLIST, SCHEMA_VERSION, add_evidence

__all__ = [
    "SCHEMA_VERSION",
    "SCHEMA_VERSIONS",
    "CHECKLIST",
    "add_evidence",
    "load_schema",
    "results_version",
    "schema_path",
    "validate_results",
    "write_results",
]

#: Every version whose schema ships with tabmia (old results stay readable).
SCHEMA_VERSIONS = (1, 2)

_HERE = Path(__file__).resolve().parent


def schema_path(version: int = SCHEMA_VERSION) -> Path:
    """The file of the JSON Schema of results.json's ``version``.

    Raises
    ------
    ValueError
        For a version tabmia has no schema of.
    """
    if version not in SCHEMA_VERSIONS:
        raise ValueError(
            f"results.json schema_version {version!r} is not one this tabmia knows "
            f"({', '.join(map(str, SCHEMA_VERSIONS))}): a newer tabmia wrote it?"
        )
    return _HERE / f"results.v{version}.schema.json"


def load_schema(version: int = SCHEMA_VERSION) -> dict[str, Any]:
    """The JSON Schema of results.json's ``version``, as a dict."""
    schema: dict[str, Any] = json.loads(schema_path(version).read_text(encoding="utf-8"))
    return schema


def results_version(payload: dict[str, Any]) -> int:
    """The schema version a results.json payload follows (1 where it records none)."""
    version = payload.get("schema_version", 1)
    if isinstance(version, bool) or not isinstance(version, int):
        raise ValueError(f"results.json schema_version must be an integer, got {version!r}")
    return version


def validate_results(payload: dict[str, Any] | str | Path) -> int:
    """Check a results.json (its payload, or its path) against its version's schema.

    Parameters
    ----------
    payload : dict, str or Path
        The parsed file, or the path of a results.json.

    Returns
    -------
    int
        The schema version it was checked against.

    Raises
    ------
    ValueError
        Naming the first field that breaks the schema (its path in the file) and why.
    ImportError
        Where ``jsonschema`` is not installed.
    """
    import jsonschema

    data: dict[str, Any] = (
        payload
        if isinstance(payload, dict)
        else json.loads(Path(payload).read_text(encoding="utf-8"))
    )
    version = results_version(data)
    validator = jsonschema.Draft202012Validator(load_schema(version))
    errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        first = errors[0]
        where = "/".join(map(str, first.absolute_path)) or "(top level)"
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise ValueError(
            f"results.json (schema version {version}) at {where}: {first.message}{more}"
        )
    return version


def write_results(path: Path, payload: dict[str, Any]) -> dict[str, Any]:
    """Write ``payload`` with its evidence sections (:func:`add_evidence`) to ``path``
    as JSON; returns what was written."""
    full = add_evidence(payload)
    path.write_text(json.dumps(full, indent=2, default=str) + "\n", encoding="utf-8")
    return full
