"""Opens a trajkit report in headless Chromium (Debian's package, driven by Playwright without
its own browser download) and checks it: no console error, no page error, no network request
besides the file itself, every chart has as many bars as it says (`data-bars`), the examples
open; then takes a full-page screenshot.

Usage: browser.py REPORT.html SCREENSHOT.png
"""

import json
import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]


def main(report: str, screenshot: str) -> None:
    url = Path(report).resolve().as_uri()
    problems = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        page.on(
            "console",
            lambda m: problems.append(f"console {m.type}: {m.text}")
            if m.type in ("error", "warning")
            else None,
        )
        page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
        page.on(
            "request",
            lambda r: problems.append(f"request: {r.url}") if r.url != url else None,
        )
        page.goto(url, wait_until="load")
        charts = page.eval_on_selector_all(
            "svg.chart",
            """els => els.map(e => ({
                label: e.getAttribute('aria-label'),
                role: e.getAttribute('role'),
                title: e.querySelector('title') ? e.querySelector('title').textContent : null,
                want: Number(e.getAttribute('data-bars')),
                bars: e.querySelectorAll('rect.bar').length,
                width: e.getBoundingClientRect().width,
            }))""",
        )
        if not charts:
            problems.append("no chart on the page")
        for c in charts:
            if c["role"] != "img" or not c["title"] or not c["label"]:
                problems.append(f"chart without its accessible name: {c}")
            if c["want"] < 1 or c["bars"] != c["want"] or c["width"] <= 0:
                problems.append(f"chart {c['label']!r}: {c['bars']} bars drawn, {c['want']} said")
        data = json.loads(page.text_content("#trajkit-report-data"))
        page.eval_on_selector_all("details", "els => els.forEach(e => e.open = true)")
        page.screenshot(path=screenshot, full_page=True)
        browser.close()
    print(json.dumps({"charts": len(charts), "trajectories": data["profile"]["stats"]["valid"]}))
    if problems:
        print("\n".join(problems), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
