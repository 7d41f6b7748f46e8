"""The state-space explorer page: one self-contained HTML file (the graph libraries, script,
style and the graph as JSON inlined; nothing fetched), and a loopback server that hands it to
a browser.

The script and style are package files in ``explorer_page/``, the libraries in
``explorer_page/vendor/``; the monitor's dashboard loads the same files and mounts the same
view on the graph of the level last solved.
"""

from __future__ import annotations

import html
import json
import re
import sys
import threading
import webbrowser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from robocell.common.hosts import host_name

PAGE_DIR = Path(__file__).with_name("explorer_page")
SCRIPT_FILE = PAGE_DIR / "explorer.js"
STYLE_FILE = PAGE_DIR / "explorer.css"
TEMPLATE_FILE = PAGE_DIR / "page.html"
VENDOR_DIR = PAGE_DIR / "vendor"
VENDOR_FILES = ("graphology.umd.min.js", "sigma.min.js")
"""The graph libraries the script draws with (their versions and licences: vendor/README.md),
in the order they load."""
LOOPBACK = "127.0.0.1"
SERVED_HOSTS = (LOOPBACK, "localhost")
"""Names the explore server answers to; a request with another ``Host`` (a page on a name
that resolves here: DNS rebinding) is refused, as the dashboard does."""
_PLACEHOLDER = re.compile(r"\{\{(TITLE|STYLE|VENDOR|SCRIPT|DATA)\}\}")


def json_for_script(data: dict) -> str:
    """JSON that can sit inside a <script> element (no '</' or '<!--' can close it early)."""
    text = json.dumps(data, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def render_page(data: dict) -> str:
    """The whole page for the explorer data of one level (``graph_view.view_data``)."""
    parts = {
        "TITLE": html.escape(f"State space of {data['level']}"),
        "STYLE": STYLE_FILE.read_text(),
        "VENDOR": "\n".join((VENDOR_DIR / name).read_text() for name in VENDOR_FILES),
        "SCRIPT": SCRIPT_FILE.read_text(),
        "DATA": json_for_script(data),
    }
    return _PLACEHOLDER.sub(lambda m: parts[m.group(1)], TEMPLATE_FILE.read_text())


class PageServer:
    """Serves one page on loopback (GET / only) until stopped: the `explore` command."""

    def __init__(self, page: str, port: int = 0) -> None:
        body = page.encode("utf-8")

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (the name http.server calls)
                if host_name(self.headers.get("Host", "")) not in SERVED_HOSTS:
                    self.send_error(421, "host not served here",
                                    f"open the explorer by {' or '.join(SERVED_HOSTS)}")
                    return
                if self.path not in ("/", "/index.html"):
                    self.send_error(404, "only / is served: the explorer is one page")
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Cache-Control", "no-store")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass  # one page to one browser: nothing worth a log line

        self.httpd = ThreadingHTTPServer((LOOPBACK, port), Handler)
        self.url = f"http://{LOOPBACK}:{self.httpd.server_address[1]}/"
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        if self._thread is not None:
            self._thread.join(5)


def serve_page(page: str, port: int, open_browser: bool) -> None:
    """Serve the page on loopback until Ctrl-C, opening a browser on it where there is one."""
    server = PageServer(page, port)
    server.start()
    print(f"explorer on {server.url}  (Ctrl-C to stop)", flush=True)
    if open_browser:
        try:
            opened = webbrowser.open(server.url)
        except webbrowser.Error:
            opened = False
        if not opened:
            print("no browser found here: open the address above in one", file=sys.stderr,
                  flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
