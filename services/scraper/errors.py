"""What can go wrong while exporting, split by what the caller must do about it.

``RunAborted`` subclasses stop the whole run (the user has to act: log in again, solve a
challenge); ``ThreadError`` subclasses lose one thread and the run goes on.
"""

from __future__ import annotations


class ScraperError(Exception):
    """Base of every scraper failure; the message is meant for the user."""


class RunAborted(ScraperError):
    """Continuing would only produce an empty or partial export: stop and tell the user why."""


class NotLoggedIn(RunAborted):
    """No saved login, or Perplexity no longer accepts it (401, 403, ``/api/auth/session`` empty)."""


class CloudflareChallenge(RunAborted):
    """Perplexity served Cloudflare's "Just a moment..." page instead of data."""


class DiscoveryFailed(RunAborted):
    """The library listing could not be read, so no thread list can be trusted."""


class BrowserUnavailable(RunAborted):
    """No Chromium to drive."""


class ThreadError(ScraperError):
    """One thread could not be exported; others may still succeed."""


class ThreadGone(ThreadError):
    """Perplexity deleted, purged or hides the thread (``ENTRY_DELETED``, ``ENTRY_EXPIRED``, ...)."""


class RequestFailed(ThreadError):
    """A request kept failing (or failed in a way retrying cannot fix)."""


class ImportFormatError(ScraperError):
    """An export file that cannot be imported: not the documented format, or refused to be read."""
