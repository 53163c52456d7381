"""The scraper's public surface: what the CLI (a client, not a service) may call.

Everything else in this package is internal to the scraper service.
"""

from services.scraper.errors import ScraperError
from services.scraper.exporter import export_library
from services.scraper.imports import (
    DATA_EXPORT_MAX_BYTES,
    Imported,
    threads_from_data_export,
    threads_from_markdown_dir,
    write_threads,
)
from services.scraper.library import check_library
from services.scraper.models import Thread
from services.scraper.session import interactive_login

__all__ = [
    "DATA_EXPORT_MAX_BYTES",
    "Imported",
    "ScraperError",
    "Thread",
    "check_library",
    "export_library",
    "interactive_login",
    "threads_from_data_export",
    "threads_from_markdown_dir",
    "write_threads",
]
