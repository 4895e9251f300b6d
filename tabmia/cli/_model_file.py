"""``--model-file`` and ``--recipe`` files: a fitted model (or an unfitted recipe) read
from joblib / pickle or skops, recognised by content; a file that is no model, or one
whose classes cannot be imported here, is one :class:`UsageError` saying what to do."""

from __future__ import annotations

import re
import warnings
import zipfile
from pathlib import Path
from typing import Any

import joblib

from tabmia.cli._inputs import UsageError, _is_table_text, first_line, sniff

__all__ = ["load_model"]


def load_model(path: Path, trust_types: bool, flag: str = "--model-file") -> Any:
    """A fitted model from a joblib / pickle or ``.skops`` file, recognised by content."""
    if path.is_dir():
        raise UsageError(f"{flag} {path}: a folder, not a model file")
    if not path.is_file():
        raise UsageError(f"{flag} {path}: no such file")
    kind = sniff(path)
    save_hint = (
        "give the fitted model saved with joblib.dump / pickle.dump (.joblib, .pkl) "
        "or skops (.skops)"
    )
    if _is_table_text(path, kind):
        what = "a CSV / text table" if kind == "text" else f"a {kind} CSV / text table"
        raise UsageError(f"{flag} {path}: {what} (a data file), not a model: {save_hint}")
    if kind in (
        "a PNG image",
        "a JPEG image",
        "a GIF image",
        "a PDF document",
        "a parquet file",
        "an SQLite database",
        "an executable",
        "an HDF5 file",
        "a numpy .npy file",
        "UTF-16 text",
    ):
        raise UsageError(f"{flag} {path}: {kind}, not a model: {save_hint}")
    if path.suffix.lower() == ".skops" or (kind == "a zip archive" and _is_skops(path)):
        return _load_skops(path, trust_types, flag)
    if kind == "a zip archive":
        raise UsageError(
            f"{flag} {path}: a zip archive (a torch checkpoint?), not a model "
            f"tabmia reads: {save_hint}"
        )
    warnings.warn(
        f"loading {path} runs any code the file contains (pickle/joblib): only audit files "
        "you trust",
        UserWarning,
        stacklevel=3,
    )
    try:
        return joblib.load(path)
    except (ImportError, AttributeError) as exc:
        raise UsageError(f"{flag} {path}: {_unimportable(exc)}") from exc
    except Exception as exc:  # garbage, truncated or foreign files
        what = "a text file" if kind == "text" else "not"
        raise UsageError(
            f"{flag} {path}: {what} a joblib or pickle file of a model "
            f"({type(exc).__name__}: {first_line(exc)}); {save_hint}"
        ) from exc


def _is_skops(path: Path) -> bool:
    try:
        with zipfile.ZipFile(path) as archive:
            return "schema.json" in archive.namelist()
    except (OSError, zipfile.BadZipFile):
        return False


def _load_skops(path: Path, trust_types: bool, flag: str) -> Any:
    try:
        import skops.io as sio
    except ImportError as exc:
        raise UsageError(f"{flag}: .skops files need skops (pip install skops)") from exc
    try:
        untrusted = sio.get_untrusted_types(file=path)
        if untrusted and not trust_types:
            raise UsageError(
                f"{flag} {path}: it contains types skops does not trust by default "
                f"({', '.join(untrusted[:5])}{' ...' if len(untrusted) > 5 else ''}); "
                "check them and pass --trust-types"
            )
        return sio.load(path, trusted=untrusted)
    except UsageError:
        raise
    except Exception as exc:
        raise UsageError(f"{flag} {path}: not a readable .skops file ({first_line(exc)})") from exc


def _unimportable(exc: BaseException) -> str:
    """Which class the pickle names that cannot be imported here, and how to fix that."""
    module, name = _missing_global(exc)
    if module is None:
        return f"cannot load it ({type(exc).__name__}: {first_line(exc)})"
    top = module.split(".")[0]
    what = f"class {name} from module {module!r}" if name else f"module {module!r}"
    if module == "__main__":
        return (
            f"the model's class {name} was defined in the script that saved it "
            "(__main__), so it cannot be loaded anywhere else: move it into a module "
            f"(e.g. my_models.py), import {name} from there, save the model again, and "
            "run tabmia with that module's folder on PYTHONPATH"
        )
    if isinstance(exc, ImportError):
        return (
            f"the model needs {what}, which is not importable here: install the package "
            f"that provides it (pip install ...; for a module of your own, put the folder "
            f"holding {top}.py or {top}/ on PYTHONPATH)"
        )
    return (
        f"the model needs {what}, but that module has no {name!r} here (another "
        f"version of {top}?): install the version the model was saved with"
    )


def _missing_global(exc: BaseException) -> tuple[str | None, str | None]:
    """``(module, name)`` the unpickler was looking up when ``exc`` was raised."""
    tb = exc.__traceback__
    while tb is not None:  # joblib unpickles in Python: find_class's frame has both
        frame = tb.tb_frame
        if frame.f_code.co_name == "find_class" and "module" in frame.f_locals:
            return str(frame.f_locals["module"]), str(frame.f_locals.get("name") or "") or None
        tb = tb.tb_next
    found = re.search(r"attribute '([^']+)' on <module '([^']+)'", str(exc))
    if found:
        return found.group(2), found.group(1)
    name = getattr(exc, "name", None)
    return (str(name), None) if name else (None, None)
