"""`make screenshot`: docs/report.png and docs/report-replay.png, gallery reports as headless Chromium shows them.

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


REPLAY = "fixtures/replay/long_session.yaml"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("fixture", nargs="?", default=str(DEFAULT))
    parser.add_argument("--out", default="docs/report.png")
    parser.add_argument("--replay-out", default="docs/report-replay.png", help="The --replay part of a replay report.")
    args = parser.parse_args()
    fixture = os.path.relpath(Path(args.fixture).resolve(), ROOT)  # the page shows the name as given
    out, replay_out = Path(args.out).resolve(), Path(args.replay_out).resolve()
    os.chdir(ROOT)
    missing = browser.missing()
    if missing:
        print(f"error: {missing}", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as folder, sync_playwright() as p:
        chromium = browser.launch(p)
        page = chromium.new_page(viewport={"width": 1200, "height": 900}, device_scale_factor=1)
        page.goto(_report(Path(folder) / "report.html", fixture, *OPTIONS).as_uri(), wait_until="load")
        page.focus("#b4")  # a block with its label shown, as on keyboard focus
        bottom = page.evaluate("document.querySelector('#seat-map').getBoundingClientRect().bottom")
        page.screenshot(path=str(out), clip={"x": 0, "y": 0, "width": 1200, "height": bottom + 16})
        page.goto(_report(Path(folder) / "replay.html", REPLAY, "--replay").as_uri(), wait_until="load")
        page.click("#call-22")  # a call whose cache broke: truncation
        page.focus("#call-22")
        box = page.evaluate(
            "(() => { const a = document.querySelector('#replay').getBoundingClientRect();"
            " const b = document.querySelector('#call-map').getBoundingClientRect();"
            " return [a.top + scrollY, b.bottom + scrollY]; })()"
        )
        page.screenshot(
            path=str(replay_out),
            full_page=True,
            clip={"x": 0, "y": box[0], "width": 1200, "height": box[1] - box[0] + 16},
        )
        chromium.close()
    print(f"wrote {out} and {replay_out}")
    return 0


def _report(path: Path, fixture: str, *options: str) -> Path:
    from click.testing import CliRunner

    from ctxkit.cli import main as ctxkit

    with CliRunner().isolation():
        try:
            ctxkit(["report", fixture, "-o", str(path), *options])
        except SystemExit as exc:
            if exc.code:
                raise SystemExit(f"error: ctxkit report {fixture} exited {exc.code}") from None
    return path


if __name__ == "__main__":
    sys.exit(main())
