"""The browser harness itself (tests/browser.py): it sees console errors and uncaught
errors, and its screenshots land in the artefacts directory."""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser

from tests.browser import ARTIFACTS, PHONE, watched_page

PAGE = """<!doctype html><meta name=viewport content="width=device-width">
<p id=p>hello</p><script>
console.log('fine'); console.warn('fine too');
document.getElementById('p').addEventListener('click', () => { throw new Error('boom'); });
</script>"""


@pytest.mark.browser
def test_console_errors_and_uncaught_errors_fail_the_check(browser: Browser) -> None:
    with watched_page(browser) as watched:
        watched.page.set_content(PAGE)
        watched.check()  # logs and warnings are not errors
        watched.page.evaluate("console.error('bad thing')")
        watched.page.click("#p")
        watched.page.wait_for_timeout(50)
        assert len(watched.errors) == 2, watched.errors
        assert "console.error: bad thing" in watched.errors[0]
        assert "uncaught: Error: boom" in watched.errors[1]
        with pytest.raises(AssertionError, match="bad thing"):
            watched.check()


@pytest.mark.browser
def test_phone_page_and_screenshot(browser: Browser) -> None:
    with watched_page(browser, PHONE, phone=True) as watched:
        watched.page.set_content(PAGE)
        assert watched.page.evaluate("innerWidth") == PHONE[0]
        shot = watched.screenshot("harness phone")
        assert shot.parent == ARTIFACTS and shot.name == "harness_phone.png"
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        watched.check()


@pytest.mark.browser
def test_errors_inside_an_iframe_count_too(browser: Browser) -> None:
    with watched_page(browser) as watched:
        watched.page.set_content(
            "<iframe srcdoc=\"<script>console.error('in the frame');"
            "setTimeout(() => { throw new Error('frame boom'); })</script>\"></iframe>")
        watched.page.wait_for_timeout(200)
        assert any("in the frame" in e for e in watched.errors), watched.errors
        assert any("frame boom" in e for e in watched.errors), watched.errors
