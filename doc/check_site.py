"""Check the built documentation in a real headless browser.

Serves the built HTML on loopback, opens pages in headless Chromium (through Selenium and
the ``chromedriver`` of the Debian ``chromium-driver`` package) and fails when a page does
not load, when one of its images is broken (the browser could not decode it), or when one of
its internal links points at a page or an anchor that does not exist.

Usage::

    python doc/check_site.py doc/_build/html [page ...]

Without pages, every top-level page of the built site is checked, found in the HTML directory
itself (:func:`default_pages`): every ``*.html`` at its top level (the index, the API
reference, the estimator and benchmark pages, the glossary, ...), every page of
``user_guide/`` and ``migration/``, the gallery's ``auto_examples/index.html`` and the API
pages of the names of the package's top level (``generated/skstruct.<Name>.html``: the
estimators).  ``index.html`` and ``api.html`` are always among them, so that a build that
lacks them fails.  Exit status 0 when every page passes, 1 otherwise.
"""

import functools
import http.server
import shutil
import sys
import threading
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urldefrag, urljoin, urlparse

# pages every build has: checked even when absent, so that their absence fails
REQUIRED_PAGES = ("index.html", "api.html")
# folders whose every page is checked
PAGE_FOLDERS = ("user_guide", "migration")


def default_pages(root):
    """The pages checked when none are given, relative to the built HTML directory ``root``.

    Every ``*.html`` at the top level, in ``user_guide/`` and in ``migration/``;
    ``auto_examples/index.html``; the API pages ``generated/skstruct.<Name>.html`` of the
    top-level names (the estimators; ``generated/skstruct.models.ChainModel.html`` and
    other submodules' pages are not).  Sorted, each once; :data:`REQUIRED_PAGES` always.
    """
    root = Path(root)
    found = {p.name for p in root.glob("*.html")}
    for folder in PAGE_FOLDERS:
        found.update(f"{folder}/{p.name}" for p in (root / folder).glob("*.html"))
    if (root / "auto_examples" / "index.html").is_file():
        found.add("auto_examples/index.html")
    for p in (root / "generated").glob("skstruct.*.html"):
        if p.name.count(".") == 2:          # skstruct.<Name>.html: a top-level name
            found.add(f"generated/{p.name}")
    found.update(REQUIRED_PAGES)
    return sorted(found)


class _Anchors(HTMLParser):
    """Collects the ids and names an HTML page defines (the targets of ``#fragment``)."""

    def __init__(self):
        super().__init__()
        self.ids = set()

    def handle_starttag(self, tag, attrs):
        for key, value in attrs:
            if key in ("id", "name") and value:
                self.ids.add(value)


@functools.cache
def _anchors(file):
    parser = _Anchors()
    parser.feed(Path(file).read_text(encoding="utf-8", errors="replace"))
    return frozenset(parser.ids)


def _serve(root):
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def _driver():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(arg)
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    if binary:
        options.binary_location = binary
    driver_path = shutil.which("chromedriver")
    service = Service(executable_path=driver_path) if driver_path else Service()
    return webdriver.Chrome(options=options, service=service)


# Run in the page: what the browser itself says about each image and link.
_PROBE = """
const imgs = Array.from(document.images).map(i => ({
    src: i.currentSrc || i.src, ok: i.complete && i.naturalWidth > 0}));
const links = Array.from(document.querySelectorAll('a[href]')).map(a => a.href);
return {ready: document.readyState, title: document.title, imgs: imgs, links: links};
"""


def check_page(driver, base, root, page):
    """Problems found on one page, as a list of strings (empty when it passes)."""
    url = urljoin(base, page)
    driver.get(url)
    info = driver.execute_script(_PROBE)
    problems = []
    if not (root / page).is_file() or info["ready"] != "complete" or "404" in info["title"]:
        return [f"{page}: did not load (title {info['title']!r})"]
    for img in info["imgs"]:
        if not img["ok"]:
            problems.append(f"{page}: broken image {img['src']}")
    n_internal = 0
    for link in info["links"]:
        target, fragment = urldefrag(link)
        if not target.startswith(base):
            continue  # outbound links are not this site's to check
        n_internal += 1
        path = unquote(urlparse(target).path).lstrip("/")
        file = root / path
        if file.is_dir():
            file = file / "index.html"
        if not file.is_file():
            problems.append(f"{page}: broken link {link}")
        elif fragment and file.suffix == ".html" and unquote(fragment) not in _anchors(file):
            problems.append(f"{page}: link to a missing anchor {link}")
    print(f"{page}: {len(info['imgs'])} images, {n_internal} internal links checked")
    return problems


def main(argv):
    if not argv:
        print(__doc__)
        return 2
    root = Path(argv[0]).resolve()
    pages = argv[1:] or default_pages(root)
    server = _serve(root)
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    driver = _driver()
    try:
        print(f"browser: {driver.capabilities.get('browserName')} "
              f"{driver.capabilities.get('browserVersion')}")
        problems = [p for page in pages for p in check_page(driver, base, root, page)]
    finally:
        driver.quit()
        server.shutdown()
    for p in problems:
        print(p)
    print("site check:", "FAILED" if problems else "ok", f"({len(pages)} pages)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
