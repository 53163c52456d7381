"""An LLM call held to a deadline: its result, or why there is none, so the rules can take over."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TypeVar

T = TypeVar("T")


def within(timeout_s: float, call: Callable[[], T]) -> tuple[T | None, str | None]:
    """``(result, None)`` when ``call`` returns within ``timeout_s``; ``(None, reason)`` when it
    times out or raises (the thread is abandoned, not waited for)."""
    executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="llm-deadline")
    future = executor.submit(call)
    try:
        return future.result(timeout=timeout_s), None
    except FutureTimeout:
        return None, f"timed out after {timeout_s:g} s"
    except Exception as exc:  # any backend failure: the caller's rules answer instead
        return None, f"{type(exc).__name__}: {exc}"
    finally:
        executor.shutdown(wait=False, cancel_futures=True)
