"""Find a data set's files, or download the ``.tgz`` archive they come in and extract
them (the Shokri et al. data sets)."""

from __future__ import annotations

import os
import shutil
import tarfile
import tempfile
from collections.abc import Sequence
from pathlib import Path

from tabmia.exceptions import DataNotFoundError

from ._home import (
    download_or_raise,
    get_data_home,
    get_download_home,
    missing_data_error,
    search_roots,
)

__all__ = ["fetch_archive_members", "find_or_fetch", "shokri_mirrors"]

# where Shokri et al.'s archives are published, in the order they are tried
_SHOKRI_MIRRORS = (
    "https://www.comp.nus.edu.sg/~reza/files",
    "https://github.com/privacytrustlab/datasets/raw/master",
)


def shokri_mirrors(archive: str) -> tuple[str, ...]:
    """The download URLs of one of Shokri et al.'s archives (``dataset_purchase.tgz``)."""
    return tuple(f"{mirror}/{archive}" for mirror in _SHOKRI_MIRRORS)


def _extract_member(tar: tarfile.TarFile, suffix: str, dest: Path) -> bool:
    """Copy the regular-file member whose name ends with ``suffix`` to ``dest`` atomically."""
    for member in tar.getmembers():
        name = member.name.lstrip("./")
        if member.isfile() and (name == suffix or name.endswith("/" + suffix)):
            src = tar.extractfile(member)
            if src is None:
                return False
            dest.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".part")
            try:
                with os.fdopen(fd, "wb") as out, src:
                    shutil.copyfileobj(src, out, 1 << 20)
                os.replace(tmp, dest)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
            return True
    return False


def fetch_archive_members(
    urls: Sequence[str],
    archive: Path | None,
    members: dict[str, Path],
    *,
    looked: Sequence[Path],
    what: str,
    data_home: Path,
    hint: str,
) -> dict[str, Path]:
    """Download ``archive`` (first URL that works) and extract ``members``.

    Parameters
    ----------
    urls : sequence of str
        Mirrors, tried in order.
    archive : pathlib.Path or None
        Where the ``.tgz`` is stored (kept for reuse); ``None`` if no writable
        location exists.
    members : dict
        Member name suffix (e.g. ``"texas/100/feats"``) -> destination path.
    looked, what, data_home, hint
        For the :class:`DataNotFoundError` raised on failure.

    Returns
    -------
    dict
        Member suffix -> extracted path.
    """
    if archive is None or not archive.is_file():
        last: DataNotFoundError | None = None
        for url in urls:
            try:
                archive = download_or_raise(
                    url,
                    archive,
                    sha256=None,
                    looked=looked,
                    what=what,
                    data_home=data_home,
                    hint=hint,
                )
                break
            except DataNotFoundError as exc:
                last = exc
        else:
            assert last is not None
            raise last
    try:
        with tarfile.open(archive, "r:*") as tar:
            missing = [s for s, dest in members.items() if not _extract_member(tar, s, dest)]
    except (tarfile.TarError, OSError) as exc:
        raise missing_data_error(
            looked, what=what, data_home=data_home, hint=hint,
            download_note=f"Downloaded archive {archive} could not be read: {exc}",
        ) from None  # fmt: skip
    if missing:
        raise missing_data_error(
            looked, what=what, data_home=data_home, hint=hint,
            download_note=f"Downloaded archive {archive} lacks {missing}.",
        )  # fmt: skip
    return dict(members)


def find_or_fetch(
    layouts: Sequence[Sequence[str]],
    *,
    data_home: str | os.PathLike | None,
    download: bool,
    urls: Sequence[str],
    archive: str,
    members: dict[str, str],
    what: str,
    hint: str,
) -> tuple[Path, ...]:
    """The files of a data set: the first layout found, or the members of its archive.

    Parameters
    ----------
    layouts : sequence of sequences of str
        The files' paths relative to a search root (:func:`search_roots`), one layout
        after the other; the first whose files all exist is used.
    data_home : str or path-like or None
        The data home.
    download : bool
        When no layout is found, download ``archive`` and extract ``members``;
        otherwise raise.
    urls : sequence of str
        Mirrors of the archive, tried in order.
    archive : str
        Where the archive is kept, relative to the download home.
    members : dict
        Member name suffix -> where it is extracted, relative to the download home, in
        the order of a layout's files.
    what, hint : str
        For the :class:`~tabmia.exceptions.DataNotFoundError`.

    Returns
    -------
    tuple of pathlib.Path
        The layout's files, or the extracted members.

    Raises
    ------
    DataNotFoundError
        Naming every path looked for, when nothing is found and ``download`` is False,
        or the download fails.
    """
    home = get_data_home(data_home)
    looked: list[Path] = []
    found: tuple[Path, ...] | None = None
    for root in search_roots(data_home):
        for layout in layouts:
            paths = tuple(root / rel for rel in layout)
            looked += paths
            if found is None and all(p.is_file() for p in paths):
                found = paths
    if found is not None:
        return found
    if not download:
        raise missing_data_error(
            looked, what=what, data_home=home, hint=hint,
            download_note="Download not attempted (pass download=True).",
        )  # fmt: skip
    dl = get_download_home(data_home)
    if dl is None:
        raise missing_data_error(
            looked, what=what, data_home=home, hint=hint,
            download_note="Download not attempted: neither the data home nor the cache "
            "home is writable.",
        )  # fmt: skip
    dests = {m: dl / rel for m, rel in members.items()}
    fetch_archive_members(
        urls, dl / archive, dests, looked=looked, what=what, data_home=home, hint=hint
    )
    return tuple(dests.values())
