"""Data sets that cannot be bundled: downloaded once, then read from a local cache."""

import gzip
import hashlib
import os
import shutil
import tempfile
import zlib
from pathlib import Path
from typing import NamedTuple
from urllib.request import urlopen

from ._load import load_conll


class _RemoteFile(NamedTuple):
    """Where a file is downloaded from and the SHA-256 of its uncompressed text."""

    url: str
    sha256: str


_CONLL2000_URL = "https://www.clips.uantwerpen.be/conll2000/chunking/"

# The digests are those of the uncompressed text, not of the .gz: gzip headers carry a
# timestamp and a file name, so a faithful re-compression of the same text would not match.
# The texts behind them are the ones served at this URL: their MD5s (train 2e2f24e9...,
# test 56944df3...) are those torchtext checks after downloading from it.
_CONLL2000 = {
    "train": _RemoteFile(
        url=_CONLL2000_URL + "train.txt.gz",
        sha256="82033cd7a72b209923a98007793e8f9de3abc1c8b79d646c50648eb949b87cea",
    ),
    "test": _RemoteFile(
        url=_CONLL2000_URL + "test.txt.gz",
        sha256="73b7b1e565fa75a1e22fe52ecdf41b6624d6f59dacb591d44252bf4d692b1628",
    ),
}

# Seconds a blocking socket operation may wait; without it a stalled server hangs forever.
_TIMEOUT = 60

_CHUNK = 1 << 16

_CONLL2000_DESCR = """\
CoNLL-2000 chunking data set
----------------------------

Text chunking: dividing a sentence into syntactically correlated, non-overlapping
groups of words (noun phrases, verb phrases, prepositional phrases, ...).  The text is
from the Wall Street Journal part of the Penn Treebank: sections 15-18 for training
(8936 sentences, 211727 tokens) and section 20 for testing (2012 sentences, 47377
tokens).

Each token has a word, a part-of-speech tag assigned by the Brill tagger (not the
gold treebank tag) and a chunk tag in the IOB2 scheme (``B-NP``, ``I-NP``, ...,
``O``); ``tokens[i]`` holds the first two columns and ``y[i]`` the chunk tags.

The data comes with no explicit license; treat it as research-use data.

Source: https://www.clips.uantwerpen.be/conll2000/chunking/

Reference: Erik F. Tjong Kim Sang and Sabine Buchholz, "Introduction to the CoNLL-2000
Shared Task: Chunking", Proceedings of CoNLL-2000 and LLL-2000, Lisbon, Portugal, 2000.
"""


def get_data_home(data_home=None):
    """The directory where skstruct caches downloaded data sets.

    Parameters
    ----------
    data_home : str or path-like, default=None
        The directory to use.  By default, the environment variable
        ``SKSTRUCT_DATA`` if it is set and not empty, else ``~/skstruct_data``.
        A leading ``~`` is expanded.

    Returns
    -------
    data_home : str
        The directory, created (with its parents) if it did not exist.

    See Also
    --------
    clear_data_home : Remove the directory.

    Examples
    --------
    >>> import os, tempfile
    >>> from skstruct.datasets import clear_data_home, get_data_home
    >>> home = get_data_home(os.path.join(tempfile.mkdtemp(), "skstruct_data"))
    >>> os.path.isdir(home)
    True
    >>> clear_data_home(home)
    >>> os.path.exists(home)
    False
    """
    data_home = _resolve_data_home(data_home)
    os.makedirs(data_home, exist_ok=True)
    return data_home


def _resolve_data_home(data_home=None):
    """:func:`get_data_home`'s directory, without creating it."""
    if data_home is None:
        data_home = os.environ.get("SKSTRUCT_DATA") or os.path.join("~", "skstruct_data")
    return os.path.expanduser(os.fspath(data_home))


def _missing_directories(directory):
    """``directory`` and those of its parents that do not exist, deepest first."""
    missing = []
    directory = Path(directory).absolute()
    while not directory.exists() and directory != directory.parent:
        missing.append(directory)
        directory = directory.parent
    return missing


def _remove_if_empty(directories):
    """Remove ``directories`` (deepest first), stopping at the first that is not empty."""
    for directory in directories:
        try:
            directory.rmdir()
        except OSError:
            # not empty (another process put a file there meanwhile) or already gone
            break


def clear_data_home(data_home=None):
    """Remove the skstruct data cache and everything in it.

    Parameters
    ----------
    data_home : str or path-like, default=None
        The directory to remove, resolved as in :func:`get_data_home`.

    See Also
    --------
    get_data_home : Where the cache lives.
    """
    shutil.rmtree(get_data_home(data_home))


def _sha256_of_file(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(_CHUNK):
            digest.update(block)
    return digest.hexdigest()


def _download(remote, path):
    """Download ``remote`` (gzipped), check it and move it to ``path`` in one step.

    The text is unpacked into a temporary file beside ``path`` and only renamed over
    ``path`` once its checksum holds, so a reader (another process, or a later call
    after an interruption) never sees a partial or wrong file.
    """
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=f".{os.path.basename(path)}.",
                               suffix=".part")
    try:
        digest = hashlib.sha256()
        try:
            with os.fdopen(fd, "wb") as out, urlopen(remote.url, timeout=_TIMEOUT) as response, \
                    gzip.GzipFile(fileobj=response) as text:
                while block := text.read(_CHUNK):
                    digest.update(block)
                    out.write(block)
        # URLError and HTTPError are OSErrors; EOFError and zlib.error come from a
        # truncated or mangled gzip stream.
        except (OSError, EOFError, zlib.error) as exc:
            raise OSError(
                f"could not download {remote.url}: {exc}. If this machine cannot reach it, "
                f"fetch that file elsewhere, gunzip it and place it by hand at {path} "
                f"(in the cache directory {os.path.dirname(path)})") from exc
        actual = digest.hexdigest()
        if actual != remote.sha256:
            raise OSError(
                f"the file downloaded from {remote.url} has SHA-256 checksum {actual} "
                f"(uncompressed), expected {remote.sha256}; nothing was written to {path}")
        os.replace(tmp, path)
    except BaseException:
        # also on KeyboardInterrupt: the temporary file must not outlive the call
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def fetch_conll2000(subset="train", *, data_home=None, download_if_missing=True):
    """Load the CoNLL-2000 chunking data set, downloading it the first time.

    The text of Wall Street Journal articles, one token per line with its
    part-of-speech tag and its chunk tag (IOB2: ``B-NP``, ``I-NP``, ...,
    ``O``).  ``"train"`` holds 8936 sentences (211727 tokens) and ``"test"``
    2012 sentences (47377 tokens).

    Parameters
    ----------
    subset : {"train", "test"}, default="train"
        Which part of the data set to load.
    data_home : str or path-like, default=None
        The cache directory, resolved as in :func:`get_data_home`.  The file is
        kept as ``<data_home>/conll2000/<subset>.txt``.
    download_if_missing : bool, default=True
        If False, raise an ``OSError`` instead of downloading a file that is
        not in the cache (or whose cached copy is damaged).

    Returns
    -------
    data : sklearn.utils.Bunch
        As returned by :func:`load_conll`: ``tokens``, a list of n_sentences
        str arrays of shape (n_tokens_i, 2) (word, part-of-speech tag);
        ``y``, a list of n_sentences str arrays of shape (n_tokens_i,) (chunk
        tags); ``n_columns`` (3); plus ``DESCR``, a description of the data
        set with its citation.

    Raises
    ------
    ValueError
        If ``subset`` is neither ``"train"`` nor ``"test"``.
    OSError
        If the file is not cached (or its cached copy is damaged) and
        ``download_if_missing`` is False; if the download fails (the message
        names the URL and where the file may be placed by hand); or if the
        downloaded text does not have the expected checksum.

    See Also
    --------
    load_conll : Read a CoNLL column file from any path.
    conll_features : Per-token feature dicts for a chain CRF.

    Notes
    -----
    The file is downloaded from
    ``https://www.clips.uantwerpen.be/conll2000/chunking/<subset>.txt.gz``,
    unpacked, and kept uncompressed.  Its SHA-256 checksum is checked after
    every download and on every load, so a damaged cached copy is detected; it
    is then deleted and downloaded again.  A download is written to a
    temporary file in the cache directory and renamed into place only once
    its checksum holds, so concurrent or interrupted calls never leave a
    partial or wrong file in the cache.  A download that fails removes its
    partial file and the folders the call created (``<data_home>`` and
    ``<data_home>/conll2000``, when they did not exist before).

    Where the host cannot be reached (no network, a firewall), place the
    files by hand:

    1. on a machine that can reach it, download ``train.txt.gz`` and
       ``test.txt.gz`` from the URL above and unpack them (``gunzip``);
    2. copy ``train.txt`` and ``test.txt`` into ``<data_home>/conll2000/``
       (by default ``~/skstruct_data/conll2000/``; see
       :func:`get_data_home`), creating the folder.

    The next call checks their checksums and reads them without downloading
    (``download_if_missing=False`` makes sure it does not try).  The expected
    checksums are those of the files in NLTK's ``conll2000`` corpus, so that
    copy is accepted as is.

    The data carries no explicit license.  If you use it, cite:
    Erik F. Tjong Kim Sang and Sabine Buchholz, "Introduction to the
    CoNLL-2000 Shared Task: Chunking", Proceedings of CoNLL-2000 and
    LLL-2000, 2000.

    Examples
    --------
    >>> from skstruct.datasets import fetch_conll2000
    >>> data = fetch_conll2000("test")  # doctest: +SKIP
    >>> len(data.tokens), sum(len(y) for y in data.y)  # doctest: +SKIP
    (2012, 47377)
    >>> data.tokens[0][0].tolist(), data.y[0][:3].tolist()  # doctest: +SKIP
    (['Rockwell', 'NNP'], ['B-NP', 'I-NP', 'I-NP'])
    """
    if subset not in _CONLL2000:
        raise ValueError(f"subset must be one of {sorted(_CONLL2000)}, got {subset!r}")
    remote = _CONLL2000[subset]
    # the data home is created only when a download needs it, and removed again if that
    # download fails: a failed first call leaves no empty folder behind
    directory = Path(_resolve_data_home(data_home)) / "conll2000"
    path = directory / f"{subset}.txt"

    if path.is_file():
        actual = _sha256_of_file(path)
        if actual != remote.sha256:
            if not download_if_missing:
                raise OSError(
                    f"the cached file {path} is damaged (SHA-256 checksum {actual}, expected "
                    f"{remote.sha256}) and download_if_missing is False; delete it or call "
                    f"again with download_if_missing=True")
            # a damaged copy is of no use to anyone: drop it now, so that even a failed
            # download below leaves no bad file in the cache
            path.unlink(missing_ok=True)
    elif not download_if_missing:
        raise OSError(f"CoNLL-2000 {subset!r} is not cached: {path} does not exist and "
                      f"download_if_missing is False")

    if not path.is_file():
        created = _missing_directories(directory)
        directory.mkdir(parents=True, exist_ok=True)
        try:
            _download(remote, str(path))
        except BaseException:
            _remove_if_empty(created)
            raise

    data = load_conll(path)
    data.DESCR = _CONLL2000_DESCR
    return data
