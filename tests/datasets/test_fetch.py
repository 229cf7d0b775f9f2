"""fetch_conll2000 and the data home, against a loopback HTTP server (no network)."""

import gzip
import hashlib
import io
import shutil
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.error import URLError

import pytest

from skstruct.datasets import _fetch, clear_data_home, fetch_conll2000, get_data_home

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "conll2000"

SENTENCES = [
    [("He", "PRP", "B-NP"), ("reckons", "VBZ", "B-VP"), ("the", "DT", "B-NP"),
     ("deficit", "NN", "I-NP"), (".", ".", "O")],
    [("Confidence", "NN", "B-NP"), ("in", "IN", "B-PP"), ("the", "DT", "B-NP"),
     ("pound", "NN", "I-NP")],
    [("Rates", "NNS", "B-NP"), ("rose", "VBD", "B-VP"), (".", ".", "O")],
]
TEXT = "".join("".join(f"{w} {p} {c}\n" for w, p, c in s) + "\n" for s in SENTENCES).encode()
SHA = hashlib.sha256(TEXT).hexdigest()


class _Server(ThreadingHTTPServer):
    """Serves ``files`` (URL path -> bytes), 404 otherwise, and records request paths."""

    def __init__(self):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.files = {}
        self.requests = []

    @property
    def base(self):
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        self.server.requests.append(self.path)
        body = self.server.files.get(self.path)
        if body is None:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format, *args):  # keep the test output clean
        pass


@pytest.fixture
def server(monkeypatch):
    # a proxy from the environment would intercept the loopback requests
    for name in ("no_proxy", "NO_PROXY"):
        monkeypatch.setenv(name, "127.0.0.1,localhost")
    srv = _Server()
    thread = threading.Thread(target=srv.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()
    thread.join(timeout=10)


@pytest.fixture
def remote(server, monkeypatch):
    """The "test" subset served by the loopback server: the record the fetcher uses."""
    server.files["/conll2000/test.txt.gz"] = gzip.compress(TEXT)
    record = _fetch._RemoteFile(url=f"{server.base}/conll2000/test.txt.gz", sha256=SHA)
    monkeypatch.setitem(_fetch._CONLL2000, "test", record)
    return record


def _cached(home):
    directory = Path(home) / "conll2000"
    return sorted(p.name for p in directory.iterdir()) if directory.is_dir() else []


def _check(data):
    assert [t.tolist() for t in data.tokens] == [[[w, p] for w, p, _ in s] for s in SENTENCES]
    assert [y.tolist() for y in data.y] == [[c for *_, c in s] for s in SENTENCES]
    assert data.n_columns == 3
    assert "Tjong Kim Sang" in data.DESCR and "Buchholz" in data.DESCR


def test_first_call_downloads_and_caches(server, remote, tmp_path):
    home = tmp_path / "home"
    _check(fetch_conll2000("test", data_home=home))
    assert server.requests == ["/conll2000/test.txt.gz"]
    cached = home / "conll2000" / "test.txt"
    assert cached.read_bytes() == TEXT  # kept uncompressed
    assert _cached(home) == ["test.txt"]  # no temporary file left behind


def test_second_call_reads_the_cache(server, remote, tmp_path):
    fetch_conll2000("test", data_home=tmp_path)
    assert len(server.requests) == 1
    _check(fetch_conll2000("test", data_home=tmp_path))
    _check(fetch_conll2000("test", data_home=tmp_path, download_if_missing=False))
    assert len(server.requests) == 1


def test_no_download_when_missing_and_not_allowed(server, remote, tmp_path):
    with pytest.raises(OSError, match="not cached") as info:
        fetch_conll2000("test", data_home=tmp_path, download_if_missing=False)
    assert str(tmp_path / "conll2000" / "test.txt") in str(info.value)
    assert server.requests == []


def test_damaged_cache_is_downloaded_again(server, remote, tmp_path):
    cached = tmp_path / "conll2000" / "test.txt"
    cached.parent.mkdir()
    cached.write_bytes(TEXT.replace(b"B-NP", b"B-VP", 1))
    _check(fetch_conll2000("test", data_home=tmp_path))
    assert cached.read_bytes() == TEXT
    assert len(server.requests) == 1


def test_damaged_cache_without_download_is_reported(server, remote, tmp_path):
    cached = tmp_path / "conll2000" / "test.txt"
    cached.parent.mkdir()
    cached.write_bytes(TEXT[:-10])
    with pytest.raises(OSError, match="damaged") as info:
        fetch_conll2000("test", data_home=tmp_path, download_if_missing=False)
    assert SHA in str(info.value) and hashlib.sha256(TEXT[:-10]).hexdigest() in str(info.value)
    assert server.requests == []


@pytest.mark.parametrize("damaged_cache", [False, True])
def test_wrong_content_is_rejected_and_not_cached(server, remote, tmp_path, damaged_cache):
    wrong = TEXT.replace(b"pound", b"dollar")
    server.files["/conll2000/test.txt.gz"] = gzip.compress(wrong)
    if damaged_cache:
        (tmp_path / "conll2000").mkdir()
        (tmp_path / "conll2000" / "test.txt").write_bytes(b"junk\n")
    with pytest.raises(OSError, match="checksum") as info:
        fetch_conll2000("test", data_home=tmp_path)
    message = str(info.value)
    assert SHA in message and hashlib.sha256(wrong).hexdigest() in message
    assert _cached(tmp_path) == []


def test_not_gzip_is_an_oserror_naming_the_url(server, remote, tmp_path):
    server.files["/conll2000/test.txt.gz"] = TEXT
    with pytest.raises(OSError, match="could not download") as info:
        fetch_conll2000("test", data_home=tmp_path)
    assert remote.url in str(info.value)
    assert _cached(tmp_path) == []


def test_http_error_names_the_url(server, remote, tmp_path):
    del server.files["/conll2000/test.txt.gz"]
    with pytest.raises(OSError, match="404") as info:
        fetch_conll2000("test", data_home=tmp_path)
    message = str(info.value)
    assert remote.url in message
    assert "by hand" in message and str(tmp_path / "conll2000") in message
    assert _cached(tmp_path) == []


def _refuse(url, timeout=None):
    raise URLError("no route to host")


@pytest.mark.parametrize("existing", ["nothing", "data home", "conll2000"])
def test_failed_download_leaves_no_folder_behind(remote, tmp_path, monkeypatch, existing):
    monkeypatch.setattr(_fetch, "urlopen", _refuse)
    home = tmp_path / "a" / "home"
    if existing != "nothing":
        home.mkdir(parents=True)
    if existing == "conll2000":
        (home / "conll2000").mkdir()
    with pytest.raises(OSError, match="could not download"):
        fetch_conll2000("test", data_home=home)
    # the folders the call created are gone; those that were there stay, empty
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == {
        "nothing": [],
        "data home": ["a", "a/home"],
        "conll2000": ["a", "a/home", "a/home/conll2000"],
    }[existing]


@pytest.mark.parametrize("error", [EOFError, KeyboardInterrupt])
def test_interrupted_download_removes_its_partial_file(remote, tmp_path, monkeypatch, error):
    class Truncated(io.BytesIO):
        """Half of the gzip stream, then ``error``: a connection dropped mid-file."""

        def __init__(self):
            stream = gzip.compress(TEXT * 50)
            super().__init__(stream[:len(stream) // 2])

        def read(self, size=-1):
            block = super().read(size)
            if not block:
                raise error("connection lost")
            return block

    monkeypatch.setattr(_fetch, "urlopen", lambda url, timeout=None: Truncated())
    with pytest.raises(OSError if error is EOFError else KeyboardInterrupt):
        fetch_conll2000("test", data_home=tmp_path / "home")
    assert not (tmp_path / "home").exists()


def test_files_placed_by_hand_are_read_without_download(remote, tmp_path, monkeypatch):
    monkeypatch.setattr(_fetch, "urlopen", _refuse)
    (tmp_path / "conll2000").mkdir()
    (tmp_path / "conll2000" / "test.txt").write_bytes(TEXT)
    _check(fetch_conll2000("test", data_home=tmp_path))
    _check(fetch_conll2000("test", data_home=tmp_path, download_if_missing=False))


def test_not_cached_without_download_creates_nothing(tmp_path):
    with pytest.raises(OSError, match="not cached"):
        fetch_conll2000("test", data_home=tmp_path / "home", download_if_missing=False)
    assert not (tmp_path / "home").exists()


def test_unreachable_host_is_an_oserror(remote, tmp_path, monkeypatch):
    with ThreadingHTTPServer(("127.0.0.1", 0), _Handler) as closed:
        port = closed.server_address[1]  # bound then closed: nothing listens there
    url = f"http://127.0.0.1:{port}/test.txt.gz"
    monkeypatch.setitem(_fetch._CONLL2000, "test", _fetch._RemoteFile(url=url, sha256=SHA))
    with pytest.raises(OSError, match="could not download") as info:
        fetch_conll2000("test", data_home=tmp_path)
    assert url in str(info.value)


@pytest.mark.parametrize("subset", ["all", "Train", "", None])
def test_bad_subset(subset, tmp_path):
    with pytest.raises(ValueError, match=r"\['test', 'train'\]"):
        fetch_conll2000(subset, data_home=tmp_path)


def test_sources_point_at_the_canonical_host():
    for subset, record in _fetch._CONLL2000.items():
        assert record.url == (
            f"https://www.clips.uantwerpen.be/conll2000/chunking/{subset}.txt.gz")
        assert len(record.sha256) == 64


# ---------------------------------------------------------------- data home


def test_data_home_argument_is_created(tmp_path):
    home = get_data_home(tmp_path / "a" / "b")
    assert isinstance(home, str) and home == str(tmp_path / "a" / "b")
    assert Path(home).is_dir()


def test_data_home_from_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("SKSTRUCT_DATA", str(tmp_path / "from_env"))
    assert get_data_home() == str(tmp_path / "from_env")
    assert (tmp_path / "from_env").is_dir()
    # an explicit argument wins over the environment
    assert get_data_home(tmp_path / "explicit") == str(tmp_path / "explicit")


def test_data_home_default_is_in_the_user_home(tmp_path, monkeypatch):
    monkeypatch.delenv("SKSTRUCT_DATA", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert get_data_home() == str(tmp_path / "skstruct_data")
    monkeypatch.setenv("SKSTRUCT_DATA", "~/elsewhere")
    assert get_data_home() == str(tmp_path / "elsewhere")


def test_fetch_uses_the_environment_data_home(server, remote, tmp_path, monkeypatch):
    monkeypatch.setenv("SKSTRUCT_DATA", str(tmp_path / "env_home"))
    fetch_conll2000("test")
    assert (tmp_path / "env_home" / "conll2000" / "test.txt").read_bytes() == TEXT


def test_clear_data_home(tmp_path):
    home = Path(get_data_home(tmp_path / "home"))
    (home / "conll2000").mkdir()
    (home / "conll2000" / "test.txt").write_text("x y z\n")
    clear_data_home(home)
    assert not home.exists()


# ---------------------------------------------------------------- the real data


def _real_copy(subset):
    """A copy of the real CoNLL-2000 file: the user's data home first (never downloading),
    then a data folder beside the repository's checkout."""
    home = Path(_fetch._resolve_data_home()) / "conll2000"
    for folder in (home, SHARED):
        if (folder / f"{subset}.txt").is_file():
            return folder / f"{subset}.txt"
    pytest.skip(f"CoNLL-2000 is not in the data home; place train.txt and test.txt in {home} "
                f"(see fetch_conll2000) to run this test")


@pytest.mark.parametrize("subset, n_sentences, n_tokens",
                         [("test", 2012, 47377), ("train", 8936, 211727)])
def test_real_copy_in_the_cache(subset, n_sentences, n_tokens, tmp_path):
    source = _real_copy(subset)
    (tmp_path / "conll2000").mkdir()
    shutil.copy(source, tmp_path / "conll2000" / f"{subset}.txt")
    # download_if_missing=False: the copy must pass the checksum, else this raises
    data = fetch_conll2000(subset, data_home=tmp_path, download_if_missing=False)
    assert len(data.tokens) == len(data.y) == n_sentences
    assert sum(len(y) for y in data.y) == n_tokens
    assert all(t.shape == (len(y), 2) for t, y in zip(data.tokens, data.y))
