"""Screenshots of every rendered chapter in headless Chromium, checked as a reader would first see
them (``make screenshots``; not in CI: it needs a Chromium and a minute a page).

Each page of ``<html>/executed`` is drawn at a reader's width into ``<out>/<page>.png``. A page
fails the check when Chromium cannot draw it or when the drawing is blank (nearly one colour:
a page that failed to load its content). ``python -m fgpo_core.book.screens [HTML] [OUT]``
prints one line per page and exits 1 when any page fails, 2 when no Chromium or no book is found.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

__all__ = ["BROWSERS", "find_browser", "screenshot", "is_blank", "main"]

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "chrome")
WIDTH, HEIGHT = 1100, 6000


def find_browser() -> str:
    """The first headless-capable browser on PATH."""
    for name in BROWSERS:
        if shutil.which(name):
            return name
    raise FileNotFoundError(
        f"no Chromium on PATH (looked for {', '.join(BROWSERS)}); install one, e.g. apt-get install chromium"
    )


def screenshot(
    browser: str, page: Path, out: Path, width: int = WIDTH, height: int = HEIGHT, timeout: float = 120
) -> bool:
    """Draw ``page`` into ``out``; True when Chromium wrote the picture."""
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run(
            [
                browser,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--hide-scrollbars",
                f"--user-data-dir={profile}",
                f"--screenshot={out}",
                f"--window-size={width},{height}",
                page.resolve().as_uri(),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=timeout,
            check=False,
        )
    return out.exists() and out.stat().st_size > 0


def is_blank(png: Path, spread: float = 2.0) -> bool:
    """Whether a picture is nearly one colour (its grey levels' standard deviation under ``spread``)."""
    import numpy as np
    from PIL import Image

    grey = np.asarray(Image.open(png).convert("L"), dtype=float)
    return float(grey.std()) < spread


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    html = Path(args[0] if args else "_build/html")
    out = Path(args[1] if len(args) > 1 else "_build/screenshots")
    pages = sorted((html / "executed").glob("*.html"))
    try:
        browser = find_browser()
        if not pages:
            raise FileNotFoundError(f"{html} holds no rendered chapters (run `make book` first)")
    except FileNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    failed = 0
    for page in pages:
        png = out / f"{page.stem}.png"
        png.unlink(missing_ok=True)
        ok = screenshot(browser, page, png)
        problem = "Chromium drew nothing" if not ok else ("blank" if is_blank(png) else "")
        failed += bool(problem)
        print(f"{page.name}: {problem or 'drawn'} ({png})")
    print(f"{len(pages) - failed} of {len(pages)} pages drawn" + (f"; {failed} failed" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
