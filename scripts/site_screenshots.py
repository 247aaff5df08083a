"""Full-page screenshots of every page of the documentation site, as a reader's browser shows it: the site built
(``mkdocs build --strict``), served on 127.0.0.1, and each page captured at a desktop width and a phone width by
Debian's Chromium through ChromeDriver (Selenium), the whole page and not only the window.

    python scripts/site_screenshots.py [--out artifacts/site-shots] [--widths 1400,420] [--pages index,cli]

needs ``pip install -e '.[docs]'`` (mkdocs, its theme and selenium) and Debian's ``chromium`` and
``chromium-driver`` (``apt-get install chromium chromium-driver``); nothing is downloaded. Writes
``<page>-<width>.png`` per page and width, and prints each file with the page's height in pixels."""

from __future__ import annotations

import argparse
import base64
import functools
import os
import subprocess
import sys
import tempfile
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
WINDOW_HEIGHT = 900


def build(site: Path) -> None:
    subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(site)],
                   cwd=ROOT, check=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})


def pages(site: Path) -> Iterator[tuple[str, str]]:
    """Each page's name (``index`` for the home page) and its path under the site's root."""
    yield "index", ""
    for html in sorted(site.glob("*/index.html")):
        yield html.parent.name, f"{html.parent.name}/"


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
        pass


def serve(site: Path) -> ThreadingHTTPServer:
    """The built site on 127.0.0.1 at a free port, served from a thread."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def browser():  # noqa: ANN201 - selenium's WebDriver, imported late
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    for path in (CHROMIUM, CHROMEDRIVER):
        if not path.exists():
            raise SystemExit(f"{path} is missing: apt-get install chromium chromium-driver")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--hide-scrollbars",
                 "--disable-gpu", "--force-device-scale-factor=1"):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)


def capture(driver, url: str, width: int, out: Path) -> int:  # noqa: ANN001 - selenium's WebDriver
    """``url`` at ``width`` CSS pixels, the whole page into ``out``; returns the page's height."""
    mobile = width < 600
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {"width": width, "height": WINDOW_HEIGHT, "deviceScaleFactor": 1, "mobile": mobile})
    driver.get(url)
    height = int(driver.execute_script("return Math.ceil(document.documentElement.scrollHeight)"))
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile})
    shot = driver.execute_cdp_cmd("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True})
    out.write_bytes(base64.b64decode(shot["data"]))
    return height


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "artifacts" / "site-shots")
    parser.add_argument("--widths", default="1400,420", help="CSS pixel widths, comma-separated")
    parser.add_argument("--pages", default="", help="only these pages (comma-separated names, index for the home)")
    args = parser.parse_args()
    widths = [int(w) for w in args.widths.split(",")]
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="site-") as scratch:
        site = Path(scratch) / "site"
        build(site)
        server = serve(site)
        driver = browser()
        try:
            base = f"http://127.0.0.1:{server.server_address[1]}/"
            chosen = {name for name in args.pages.split(",") if name}
            for name, path in pages(site):
                if chosen and name not in chosen:
                    continue
                for width in widths:
                    out = args.out / f"{name}-{width}.png"
                    height = capture(driver, base + path, width, out)
                    print(f"{out} {width}×{height}", flush=True)
        finally:
            driver.quit()
            server.shutdown()


if __name__ == "__main__":
    main()
