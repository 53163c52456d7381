"""The logged-in browser: launch Chromium, reuse or create the saved login, verify it.

The login happens in a visible window where the user signs in (and solves any Cloudflare challenge);
the resulting Playwright storage state is saved and reused by every scrape. Cloudflare challenges
headless Chromium, so scrapes are headful too unless asked otherwise; without a desktop (a
container, a server) the window goes to a virtual display (Xvfb). Login and scrape launch the same
browser with the same user agent, so the clearance cookie the login earned stays valid. A challenge
page that shows up anyway is given ``scrape_challenge_wait_s`` to clear by itself (it often does
within seconds) before the run stops with what to do. Every run checks ``/api/auth/session`` before
reading anything, so an expired login is reported as such instead of producing an empty export.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from playwright.sync_api import Browser, BrowserContext, Page, Playwright, Response, sync_playwright
from playwright.sync_api import Error as PlaywrightError

from services.scraper.checkpoint import write_atomic
from services.scraper.client import (
    CHALLENGE_HINT,
    DEFAULT_API_VERSION,
    RELOGIN_HINT,
    HttpResult,
    PerplexityClient,
    RetryPolicy,
    is_challenge,
)
from services.scraper.errors import BrowserUnavailable, CloudflareChallenge, NotLoggedIn
from shared.settings import ScrapingSettings

log = logging.getLogger(__name__)

LAUNCH_ARGS = ["--disable-blink-features=AutomationControlled"]
VIRTUAL_DISPLAY_SIZE = (1280, 900)
CHALLENGE_POLL_MS = 500
SYSTEM_CHROMIUMS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
READY_TIMEOUT_S = 12.0
LOGIN_POLL_S = 1.0
_VERSION = re.compile(r"[?&]version=([\d.]+)")

_FETCH_JS = """
async ({url, method, body, headers, timeoutMs}) => {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  const init = {method, headers, credentials: "include", signal: controller.signal};
  if (body !== null) { init.headers = {...headers, "content-type": "application/json"};
                       init.body = JSON.stringify(body); }
  try {
    const response = await fetch(url, init);
    return {status: response.status, body: await response.text(),
            content_type: response.headers.get("content-type") || "",
            retry_after: response.headers.get("retry-after")};
  } catch (error) {
    return {status: 0, body: String(error), content_type: "", retry_after: null};
  } finally { clearTimeout(timer); }
}
"""


@dataclass
class PageTransport:
    """Sends requests with the page's own ``fetch``, so they carry its cookies and fingerprint."""

    page: Page
    timeout_s: float

    def request(self, method: str, url: str, body: Any | None, headers: dict[str, str]) -> HttpResult:
        args = {
            "url": url,
            "method": method,
            "body": body,
            "headers": headers,
            "timeoutMs": self.timeout_s * 1000,
        }
        return HttpResult(**self.page.evaluate(_FETCH_JS, args))


def chromium_executable(settings: ScrapingSettings, playwright: Playwright) -> str | None:
    """The configured Chromium, else Playwright's own when installed (``None``), else the system's."""
    if settings.chromium_path:
        if not settings.chromium_path.exists():
            raise BrowserUnavailable(
                f"Chromium did not start: there is no {settings.chromium_path} "
                "(HINDSIGHT_CHROMIUM_PATH). "
                "Install Chromium (`apt-get install chromium`) or point HINDSIGHT_CHROMIUM_PATH at it."
            )
        return str(settings.chromium_path)
    if Path(playwright.chromium.executable_path).exists():
        return None
    for name in SYSTEM_CHROMIUMS:
        found = shutil.which(name)
        if found:
            return found
    raise BrowserUnavailable(
        "No Chromium found: install one (`apt-get install chromium` or `playwright install chromium`) "
        "or point HINDSIGHT_CHROMIUM_PATH at it."
    )


def user_agent(browser: Browser) -> str:
    """The user agent of a headful Chromium of this version, for headless and headful runs alike."""
    return (
        "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
        f"Chrome/{browser.version} Safari/537.36"
    )


def has_desktop() -> bool:
    """A window can be shown: a DISPLAY is set, or the platform is not one that needs it."""
    return bool(os.environ.get("DISPLAY")) or sys.platform != "linux"


@contextmanager
def display_env(headless: bool) -> Iterator[dict[str, str | float | bool] | None]:
    """The environment a headful browser needs: a virtual display (Xvfb) when there is no desktop.

    ``None`` means "the process's own environment" (headless, or a DISPLAY is already set).
    """
    if headless or has_desktop():
        yield None
        return
    if not shutil.which("Xvfb"):
        raise BrowserUnavailable(
            "A visible browser needs a display and there is none (no DISPLAY, and Xvfb is not installed). "
            "Install Xvfb (`apt-get install xvfb`), or set HINDSIGHT_SCRAPE_HEADLESS=true and restart "
            "Hindsight (Cloudflare may then challenge it)."
        )
    from pyvirtualdisplay.display import Display

    display = Display(visible=False, size=VIRTUAL_DISPLAY_SIZE, manage_global_env=False)
    display.start()
    try:
        yield {**os.environ, "DISPLAY": display.new_display_var}
    finally:
        display.stop()


@contextmanager
def open_browser(playwright: Playwright, settings: ScrapingSettings, headless: bool) -> Iterator[Browser]:
    """Chromium, headful on a real or virtual display unless ``headless``; closed on exit."""
    executable = chromium_executable(settings, playwright)
    with display_env(headless) as env:
        try:
            browser = playwright.chromium.launch(
                executable_path=executable,
                headless=headless,
                args=LAUNCH_ARGS,
                env=env,
            )
        except PlaywrightError as exc:
            hint = (
                ""
                if headless
                else " A visible window needs a desktop or Xvfb, or set HINDSIGHT_SCRAPE_HEADLESS=true."
            )
            raise BrowserUnavailable(f"Chromium did not start: {exc.message.splitlines()[0]}.{hint}") from exc
        try:
            yield browser
        finally:
            browser.close()


def session_user(page: Page, settings: ScrapingSettings) -> dict[str, Any] | None:
    """The ``/api/auth/session`` payload when it names a logged-in user, else ``None``."""
    url = f"{settings.perplexity_base_url.rstrip('/')}/api/auth/session"
    result = PageTransport(page, settings.scrape_timeout_s).request("GET", url, None, {"accept": "*/*"})
    if is_challenge(result):
        raise CloudflareChallenge(CHALLENGE_HINT)
    try:
        payload = json.loads(result.body) if result.status == 200 else {}
    except ValueError:
        payload = {}
    logged_in = isinstance(payload, dict) and any(payload.get(k) for k in ("user", "expires", "email"))
    return payload if logged_in else None


def save_state(context: BrowserContext, path: Path) -> None:
    """Persist the storage state; a state without cookies would only lock the user out, so never."""
    state = context.storage_state()
    if not state.get("cookies"):
        raise NotLoggedIn("The browser holds no cookies after login; nothing was saved. " + RELOGIN_HINT)
    write_atomic(path, json.dumps(state, indent=2).encode("utf-8"))
    path.chmod(0o600)


def challenge_showing(page: Page) -> bool:
    """The page is Cloudflare's challenge (or still navigating away from it)."""
    try:
        text = f"{page.title()}\n{page.content()}"
    except PlaywrightError:
        return True
    return is_challenge(HttpResult(status=200, body=text, content_type="text/html"))


def wait_out_challenge(page: Page, wait_s: float) -> bool:
    """Poll title and text while a challenge shows, for up to ``wait_s``; ``True`` if one showed
    and cleared, ``False`` if none showed; :class:`CloudflareChallenge` if it did not clear."""
    if not challenge_showing(page):
        return False
    log.info("Cloudflare challenge page; waiting up to %.0fs for it to clear", wait_s)
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        page.wait_for_timeout(CHALLENGE_POLL_MS)
        if not challenge_showing(page):
            log.info("the challenge cleared")
            return True
    raise CloudflareChallenge(
        f"The Cloudflare challenge did not clear within {wait_s:.0f}s. {CHALLENGE_HINT}"
    )


@dataclass
class LibraryPage:
    """The ``/library`` page, and what its own XHRs revealed (API version, readiness)."""

    page: Page
    api_version: str = DEFAULT_API_VERSION
    ready: bool = False

    def on_response(self, response: Response) -> None:
        if "/rest/" not in response.url or response.status != 200:
            return
        match = _VERSION.search(response.url)
        if match:
            self.api_version = match.group(1)
        if "/rest/userinfo" in response.url:
            self.ready = True

    def wait_ready(self, timeout_s: float = READY_TIMEOUT_S) -> None:
        """Wait for the page's own ``/rest/userinfo``: before it, listings come back empty."""
        deadline = time.monotonic() + timeout_s
        while not self.ready and time.monotonic() < deadline:
            self.page.wait_for_timeout(100)
        if not self.ready:
            log.warning("the library page never fetched /rest/userinfo; continuing anyway")


def open_library(page: Page, settings: ScrapingSettings) -> LibraryPage:
    library = LibraryPage(page)
    page.on("response", library.on_response)
    response = goto_library(page, settings)
    challenged = wait_out_challenge(page, settings.scrape_challenge_wait_s)
    if not challenged and response is not None and response.status in (401, 403):
        raise NotLoggedIn(
            f"{page.url} answered {response.status}; the saved login has expired. {RELOGIN_HINT}"
        )
    return library


def goto_library(page: Page, settings: ScrapingSettings) -> Response | None:
    url = f"{settings.perplexity_base_url.rstrip('/')}/library"
    try:
        return page.goto(url, wait_until="domcontentloaded", timeout=settings.scrape_timeout_s * 1000)
    except PlaywrightError as exc:
        raise BrowserUnavailable(f"Could not open {url}: {exc.message.splitlines()[0]}") from exc


def reload_past_challenge(page: Page, settings: ScrapingSettings) -> None:
    """Open the library page again and wait out the challenge it shows (mid-run challenges)."""
    goto_library(page, settings)
    wait_out_challenge(page, settings.scrape_challenge_wait_s)


@dataclass
class BrowserSession:
    page: Page
    client: PerplexityClient
    user: dict[str, Any]


@contextmanager
def scrape_session(settings: ScrapingSettings, state: Path) -> Iterator[BrowserSession]:
    """A browser on ``/library``, logged in with the saved state in ``state`` (headful unless
    configured not to)."""
    if not state.exists():
        raise NotLoggedIn(f"No saved Perplexity login at {state}. {RELOGIN_HINT}")
    with (
        sync_playwright() as playwright,
        open_browser(playwright, settings, settings.scrape_headless) as browser,
    ):
        context = browser.new_context(storage_state=str(state), user_agent=user_agent(browser))
        page = context.new_page()
        library = open_library(page, settings)
        user = session_user(page, settings)
        if user is None:
            raise NotLoggedIn(
                f"The saved Perplexity login in {state} has expired (/api/auth/session names no user). "
                + RELOGIN_HINT
            )
        library.wait_ready()
        policy = RetryPolicy(
            settings.scrape_max_attempts,
            settings.scrape_backoff_base_s,
            settings.scrape_backoff_max_s,
        )
        client = PerplexityClient(
            PageTransport(page, settings.scrape_timeout_s),
            settings.perplexity_base_url,
            policy,
            api_version=library.api_version,
            clear_challenge=lambda: reload_past_challenge(page, settings),
        )
        yield BrowserSession(page=page, client=client, user=user)
        save_state(context, state)


def interactive_login(
    settings: ScrapingSettings, state: Path, on_waiting: Callable[[Page], None], *, headless: bool = False
) -> dict[str, Any]:
    """Open a browser window on ``/settings``, wait for the user to log in, save the storage state.

    ``on_waiting`` runs once the window is open (the CLI prints instructions there). Login is
    detected by polling ``/api/auth/session`` from whichever tab is on Perplexity's origin. The
    browser and user agent are the ones scrapes use.
    """
    base = settings.perplexity_base_url.rstrip("/")
    with sync_playwright() as playwright:
        chromium_executable(settings, playwright)  # no browser at all is the first thing to say
        if not headless and not has_desktop():
            raise BrowserUnavailable(
                "Logging in needs a browser window you can see, and this machine has no desktop (DISPLAY "
                "is unset). Run `hindsight scrape --login` on a machine with one, then copy the saved login "
                f"({state.name}) to {state}."
            )
        return _log_in(playwright, settings, state, on_waiting, headless, base)


def _log_in(
    playwright: Playwright,
    settings: ScrapingSettings,
    state: Path,
    on_waiting: Callable[[Page], None],
    headless: bool,
    base: str,
) -> dict[str, Any]:
    """The login window: wait until a tab on Perplexity's origin is logged in, then save the state."""
    with open_browser(playwright, settings, headless) as browser:
        context = browser.new_context(user_agent=user_agent(browser))
        page = context.new_page()
        page.goto(
            f"{base}/settings",
            wait_until="domcontentloaded",
            timeout=settings.scrape_timeout_s * 1000,
        )
        on_waiting(page)
        deadline = time.monotonic() + settings.scrape_login_timeout_s
        while time.monotonic() < deadline:
            if not context.pages:
                raise NotLoggedIn("The login window was closed before logging in; nothing was saved.")
            for tab in context.pages:
                user = _poll_user(tab, base, settings)
                if user:
                    save_state(context, state)
                    return user
            time.sleep(LOGIN_POLL_S)
        raise NotLoggedIn(f"No login within {settings.scrape_login_timeout_s:.0f}s; nothing was saved.")


def _poll_user(tab: Page, base: str, settings: ScrapingSettings) -> dict[str, Any] | None:
    if not tab.url.startswith(base):
        return None
    try:
        return session_user(tab, settings)
    except (PlaywrightError, CloudflareChallenge):
        return None
