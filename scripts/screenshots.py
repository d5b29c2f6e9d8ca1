"""Takes the README's screenshots with headless Chromium (Debian's package, driven by
Playwright): docs/report.png, the top of the sample pipeline's report, and docs/show.png,
`trajkit show` in colour, its ANSI codes turned into HTML by the small converter below.

Run from the repository root after `trajkit run sample_data/pipeline.toml`:
    python scripts/screenshots.py
"""

import html
import re
import subprocess
from pathlib import Path

from playwright.sync_api import sync_playwright

TRAJKIT = "target/release/trajkit"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]
COLOURS = {"1": "font-weight:bold", "2": "color:#8b949e", "32": "color:#3fb950",
           "33": "color:#d29922", "34": "color:#58a6ff"}


def ansi_to_html(text: str) -> str:
    """SGR sequences (bold, dim, the few colours `show` uses) as nested spans."""
    out, open_spans = [], 0
    for part in re.split(r"(\x1b\[[0-9;]*m)", text):
        m = re.fullmatch(r"\x1b\[([0-9;]*)m", part)
        if not m:
            out.append(html.escape(part))
        elif m.group(1) in ("", "0"):
            out.append("</span>" * open_spans)
            open_spans = 0
        else:
            style = ";".join(COLOURS.get(c, "") for c in m.group(1).split(";"))
            out.append(f'<span style="{style}">')
            open_spans += 1
    return "".join(out) + "</span>" * open_spans


def main() -> None:
    subprocess.run([TRAJKIT, "report", "-q", "out/pipeline", "-o", "out/report.html"], check=True)
    subprocess.run([TRAJKIT, "convert", "-q", "sample_data", "-o", "out/trajectories.jsonl"],
                   check=True)
    shown = subprocess.run(
        [TRAJKIT, "show", "out/trajectories.jsonl", "--index", "14", "--color", "always"],
        check=True, capture_output=True, text=True).stdout
    term = Path("out/show.html")
    term.write_text(
        '<!DOCTYPE html><meta charset="utf-8"><body style="margin:0;background:#0d1117">'
        '<pre style="margin:0;padding:14px 18px;color:#c9d1d9;font:13px/1.4 monospace">'
        f"$ trajkit show out/trajectories.jsonl --index 14\n{ansi_to_html(shown)}</pre>")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
        page = browser.new_page(viewport={"width": 1100, "height": 760})
        page.goto(Path("out/report.html").resolve().as_uri())
        page.screenshot(path="docs/report.png")
        page = browser.new_page(viewport={"width": 760, "height": 440})
        page.goto(term.resolve().as_uri())
        page.screenshot(path="docs/show.png", full_page=True)
        browser.close()


if __name__ == "__main__":
    main()
