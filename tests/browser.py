"""Headless Chromium driven by Playwright, for the tests of pages (the replay viewer, the
arena's web pages).

The browser is Debian's `chromium` (`apt-get install chromium`; .ci/run installs it),
launched by Playwright with `executable_path`: no `playwright install`, no browser
download. One browser per test module (see `browser`); each test gets a fresh context
(cookies, cache) and a page that records every console error and uncaught page error:
the `page` fixture fails the test if any was seen (`Watched.check()` asserts it mid-test
too).

Screenshots go to `$CFARENA_ARTIFACTS`, or `tests/artifacts/` (ignored by git).
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from playwright.sync_api import Browser, ConsoleMessage, Error, Page, sync_playwright

DESKTOP = (1400, 900)
PHONE = (390, 844)
ARTIFACTS = Path(os.environ.get("CFARENA_ARTIFACTS")
                 or Path(__file__).resolve().parent / "artifacts")


def find_chromium() -> str:
    """The system's Chromium, or a clear failure saying how to install it."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    pytest.fail("Chromium is not installed: the browser tests need it "
                "(Debian: apt-get install -y chromium; .ci/run installs it)")


def launch_args() -> list[str]:
    args = ["--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run"]
    if os.geteuid() == 0:
        # Chromium refuses to start as root with its own sandbox (it needs an unprivileged
        # user for its setuid/namespace sandbox), and CI runs as root. The pages it opens
        # are the project's own, from loopback or local files: no untrusted content.
        args.append("--no-sandbox")
    return args


@contextmanager
def chromium() -> Iterator[Browser]:
    """Playwright's driver and a headless Chromium, both stopped on the way out."""
    executable = find_chromium()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=executable, args=launch_args(),
                                     headless=True)
        try:
            yield browser
        finally:
            browser.close()


def artifact(name: str) -> Path:
    """Where an artefact called `name` goes (the directory made on demand)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS / name


@dataclass
class Watched:
    """A page whose console errors and uncaught errors are collected."""

    page: Page
    errors: list[str] = field(default_factory=list)

    def check(self) -> None:
        """Fail if the page has logged an error or thrown an uncaught exception so far."""
        assert self.errors == [], "errors in the page:\n" + "\n".join(self.errors)

    def screenshot(self, name: str, *, full_page: bool = True) -> Path:
        """A PNG of the page kept as an artefact `name`.png; its path is printed."""
        path = artifact(re.sub(r"[^\w.-]+", "_", name) + ".png")
        self.page.screenshot(path=str(path), full_page=full_page)
        print(f"screenshot: {path}")
        return path


def _console(errors: list[str], message: ConsoleMessage) -> None:
    if message.type in ("error", "assert"):
        where = message.location
        errors.append(f"console.{message.type}: {message.text} "
                      f"({where.get('url', '')}:{where.get('lineNumber', '')})")


def _page_error(errors: list[str], error: Error) -> None:
    errors.append(f"uncaught: {error.name}: {error.message}\n{error.stack or ''}")


@contextmanager
def watched_page(browser: Browser, size: tuple[int, int] = DESKTOP, *,
                 phone: bool = False) -> Iterator[Watched]:
    """A page in a fresh context (`phone`: a touch device honouring the viewport meta tag),
    watched for errors; closed on the way out. Checking the errors is the caller's."""
    width, height = size
    context = browser.new_context(viewport={"width": width, "height": height},
                                  device_scale_factor=1, is_mobile=phone, has_touch=phone)
    try:
        page = context.new_page()
        watched = Watched(page)
        page.on("console", lambda m: _console(watched.errors, m))
        page.on("pageerror", lambda e: _page_error(watched.errors, e))
        yield watched
    finally:
        context.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """One headless Chromium per test module (~1 s to start). Not per session: the sync
    API runs Playwright's event loop in a greenlet of the main thread, which stays marked
    as the thread's running loop while Playwright is up, so every later `asyncio.run()`
    in the session would fail ("cannot be called from a running event loop"). A module
    that mixes browser tests with asyncio ones must run the asyncio ones first."""
    with chromium() as b:
        yield b


@pytest.fixture
def page(browser: Browser) -> Iterator[Watched]:
    """A desktop-sized (1400x900) page; the test fails on any console or page error."""
    with watched_page(browser) as watched:
        yield watched
        watched.check()
