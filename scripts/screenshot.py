"""`make screenshot`: docs/report.png, a gallery report as headless Chromium shows it.

    python scripts/screenshot.py [FIXTURE] [--out docs/report.png]

Uses the same browser set-up as the report's browser tests (tests/browser.py):
the system's Chromium driven by Playwright, nothing downloaded.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests import browser  # noqa: E402

DEFAULT = "fixtures/tool_loop_in_flight.yaml"
OPTIONS = ["--max-input-tokens", "800"]  # a small window, so the seat map shows every segment at scale


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("fixture", nargs="?", default=str(DEFAULT))
    parser.add_argument("--out", default="docs/report.png")
    args = parser.parse_args()
    fixture = os.path.relpath(Path(args.fixture).resolve(), ROOT)  # the page shows the name as given
    out = Path(args.out).resolve()
    os.chdir(ROOT)
    missing = browser.missing()
    if missing:
        print(f"error: {missing}", file=sys.stderr)
        return 2
    from click.testing import CliRunner
    from playwright.sync_api import sync_playwright

    from ctxkit.cli import main as ctxkit

    with tempfile.TemporaryDirectory() as folder:
        page_path = Path(folder) / "report.html"
        with CliRunner().isolation():
            try:
                ctxkit(["report", fixture, "-o", str(page_path), *OPTIONS])
            except SystemExit as exc:
                if exc.code:
                    print(f"error: ctxkit report exited {exc.code}", file=sys.stderr)
                    return 2
        with sync_playwright() as p:
            chromium = browser.launch(p)
            page = chromium.new_page(viewport={"width": 1200, "height": 900}, device_scale_factor=1)
            page.goto(page_path.as_uri(), wait_until="load")
            page.focus("#b4")  # a block with its label shown, as on keyboard focus
            bottom = page.evaluate("document.querySelector('#seat-map').getBoundingClientRect().bottom")
            page.screenshot(path=str(out), clip={"x": 0, "y": 0, "width": 1200, "height": bottom + 16})
            chromium.close()
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
