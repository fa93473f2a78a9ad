"""Headless Chromium for the report's browser tests and `make screenshot` (R-HTML-4).

The system's browser (Debian's `chromium` package), driven by Playwright for
Python through `executable_path`: nothing is downloaded. `missing()` says in one
line what is not there and how to get it.
"""

from __future__ import annotations

import os
from typing import Any

CHROMIUM = os.environ.get("CTXKIT_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def missing() -> str | None:
    """None when the browser tests can run; else one line saying how to get them."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "browser tests need Playwright for Python: pip install -e '.[browser]' (no browser download is needed)"
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        return f"browser tests need headless Chromium at {CHROMIUM}: `apt-get install chromium` (Debian) gives it"
    return None


def launch(playwright: Any) -> Any:
    return playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
