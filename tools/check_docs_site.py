"""Opens pages of the built documentation site in headless Chromium and fails on errors.

    python tools/check_docs_site.py [docs/_build/html] [--chromium PATH] [--screenshots DIR]

The site is served over HTTP on 127.0.0.1 (a free port), as a reader's browser would load it,
and each page is loaded with Playwright driving the Chromium given by ``--chromium`` (default:
``chromium`` on PATH, as Debian's package installs it; Playwright's own browser downloads are
not used). A page fails on an uncaught JavaScript error, a console error, a request that
failed or answered 400 or more, an image that did not load, or a missing title; a gallery
page fails when it shows no figure. Needs ``pip install playwright`` (tools/docs installs it).

Before the browser, the site's object inventory is checked: every name in ``monoprop.__all__``,
``monoprop.noise.__all__`` and ``monoprop.optimize.__all__`` (of the monoprop this Python
imports), ``monoprop.optimize.jax.expectation`` and the noise, Clifford, Qiskit conversion and
persistence modules must have an entry in the API reference.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import shutil
import sys
import threading
import zlib
from pathlib import Path

# The pages opened: the index, API pages, and the gallery with two of its figure pages.
PAGES = [
    "index.html",
    "api/index.html",
    "api/generated/monoprop.PauliPropagator.html",
    "auto_examples/index.html",
    "auto_examples/vqe_tfim.html",
    "auto_examples/error_bars.html",
]
# Pages that must show at least one figure of an executed example.
FIGURE_PAGES = {"auto_examples/vqe_tfim.html", "auto_examples/error_bars.html"}
FIGURE_SELECTOR = "img.sphx-glr-single-img, img.sphx-glr-multi-img"


def documented_names(site: Path) -> set[str]:
    """The Python objects the site documents, from its ``objects.inv``."""
    data = (site / "objects.inv").read_bytes()
    body = data.split(b"\n", 4)[4]  # four header lines, then the zlib-compressed entries
    names = set()
    for line in zlib.decompress(body).decode().splitlines():
        name, role = line.split(" ", 2)[:2]
        if role.startswith("py:"):
            names.add(name)
    return names


def public_names() -> list[str]:
    """Every public name the API reference must document."""
    import monoprop
    import monoprop.noise
    import monoprop.optimize

    names = [f"{module.__name__}.{name}" for module in (monoprop, monoprop.noise, monoprop.optimize)
             for name in module.__all__]  # fmt: skip
    modules = ["noise", "clifford", "qiskit_conversion", "persistence", "optimize"]
    return names + [f"monoprop.{m}" for m in modules] + ["monoprop.optimize.jax.expectation"]


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def do_GET(self) -> None:
        # A browser asks the server root for an icon on its own; the site links none.
        if self.path == "/favicon.ico":
            self.send_response(204)
            self.end_headers()
            return
        super().do_GET()

    def log_message(self, format: str, *args: object) -> None:
        pass


def serve(root: Path) -> tuple[http.server.ThreadingHTTPServer, str]:
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    host, port = server.server_address[:2]
    return server, f"http://{host!s}:{port}/"


def check_page(browser, base: str, page_path: str, screenshots: Path | None) -> list[str]:
    """The problems found on one page (an empty list when it is clean)."""
    problems: list[str] = []
    page = browser.new_page()

    def on_console(message) -> None:
        if message.type == "error":
            problems.append(f"console error: {message.text}")

    def on_response(response) -> None:
        if response.status >= 400:
            problems.append(f"HTTP {response.status}: {response.url}")

    page.on("pageerror", lambda error: problems.append(f"uncaught error: {error}"))
    page.on("console", on_console)
    page.on("response", on_response)
    page.on(
        "requestfailed",
        lambda request: problems.append(f"request failed: {request.url} ({request.failure})"),
    )
    response = page.goto(base + page_path, wait_until="load")
    if response is None or not response.ok:
        problems.append(f"the page itself did not load ({response and response.status})")
    page.wait_for_load_state("networkidle")
    if not page.title().strip():
        problems.append("no title")
    broken = page.evaluate(
        """() => Array.from(document.images)
            .filter(img => !img.complete || img.naturalWidth === 0)
            .map(img => img.getAttribute("src"))"""
    )
    problems += [f"image did not load: {src}" for src in broken]
    if page_path in FIGURE_PAGES:
        figures = page.evaluate(
            """(selector) => Array.from(document.querySelectorAll(selector))
                .filter(img => img.complete && img.naturalWidth > 0).length""",
            FIGURE_SELECTOR,
        )
        if figures == 0:
            problems.append("a gallery page without a figure")
    if screenshots is not None:
        screenshots.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(screenshots / (page_path.replace("/", "_") + ".png")))
    page.close()
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument("site", nargs="?", default="docs/_build/html", help="the built site")
    parser.add_argument("--chromium", default=None, help="Chromium executable (default: PATH)")
    parser.add_argument("--screenshots", type=Path, default=None, help="save a PNG per page")
    args = parser.parse_args()

    from playwright.sync_api import sync_playwright

    site = Path(args.site)
    missing = [p for p in PAGES if not (site / p).is_file()]
    if missing:
        print(f"not built: {', '.join(str(site / p) for p in missing)}", file=sys.stderr)
        return 1
    chromium = args.chromium or next(
        filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))), None
    )
    if chromium is None:
        print("no Chromium found: apt-get install chromium, or pass --chromium", file=sys.stderr)
        return 1

    documented = documented_names(site)
    undocumented = [name for name in public_names() if name not in documented]
    print(f"{'ok  ' if not undocumented else 'FAIL'} API reference: every public name")
    for name in undocumented:
        print(f"       no API entry: {name}")
    failed = bool(undocumented)

    server, base = serve(site)
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
            try:
                for page_path in PAGES:
                    problems = check_page(browser, base, page_path, args.screenshots)
                    print(f"{'ok  ' if not problems else 'FAIL'} {page_path}")
                    for problem in problems:
                        print(f"       {problem}")
                    failed += bool(problems)
            finally:
                browser.close()
    finally:
        server.shutdown()
    print(f"{len(PAGES) + 1 - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
