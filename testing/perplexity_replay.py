"""A local imitation of Perplexity's web endpoints (docs/perplexity.md) for the scraper's tests.

It serves HTML pages that fire their own XHRs like the real app (``/library`` fetches
``/rest/userinfo`` and ``list_ask_threads``; ``/search/<slug>`` fetches its thread), the REST
endpoints in the shapes the real site serves (bare-array listings with ``limit``/``offset`` whose
items carry no ``is_pinned``; pinned threads; threads with opaque-cursor paging whose entries come in
every :class:`Shape`), the login cookie check, the official per-thread export, and the ways the real
site is less kind: a capped page size, an ignored ``offset``, 429 with ``Retry-After``, 5xx, 401,
Cloudflare's challenge page (for good, or until it clears), ``ENTRY_DELETED``. Every request is
logged, with its user agent, for assertions.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from dataclasses import dataclass, field
from enum import StrEnum
from http.cookies import SimpleCookie
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

COOKIE = "__Secure-next-auth.session-token"
API_VERSION = "2.18"
CHALLENGE_HTML = (
    "<!DOCTYPE html><html><head><title>Just a moment...</title></head><body>"
    '<div id="cf-browser-verification">Checking your browser before accessing www.perplexity.ai.</div>'
    "</body></html>"
)


class Shape(StrEnum):
    """How the server renders an entry: the shapes real responses come in."""

    #: ``text`` (JSON steps) always; ``blocks`` with ``ask_text`` and ``web_results`` when schematized.
    CLASSIC = "classic"
    #: Schematized only: ``blocks`` and no ``text``; ``sources`` is ``{"sources": ["web"]}``.
    BLOCKS_ONLY = "blocks_only"
    #: No ``web_results`` block: the sources are ``sources_answer_mode`` rows, numbered by ``citation``
    #: and served out of order.
    SOURCES_MODE = "sources_mode"
    #: Deep Research / Computer: no ``ask_text``; the answer is a ``workflow_root`` text item, and the
    #: block is served only when the request asks for the ``workflow_widgets`` use case.
    WORKFLOW = "workflow"
    #: A Computer sub-agent's placeholder entry: a ``subagent_result`` block and nothing else.
    SUBAGENT_STUB = "subagent_stub"


@dataclass
class ReplayEntry:
    question: str
    answer: str
    sources: list[dict[str, str]] = field(default_factory=list)
    created: str = "2025-07-26T00:50:10.801065"
    uuid: str = ""
    shape: Shape = Shape.CLASSIC
    #: ``media_items[]`` (``medium``, ``image``, ``url``, ``name``) and ``attachments[]`` (URLs), as
    #: Yiksing/pplx-tools documents entries.
    media: list[dict[str, str]] = field(default_factory=list)
    attachments: list[str] = field(default_factory=list)

    def plain(self, thread: ReplayThread) -> dict[str, Any]:
        """The plain flavour: ``text`` is a JSON string of steps whose FINAL answer is JSON again."""
        final = {
            "answer": self.answer,
            "web_results": self.sources,
            "chunks": [self.answer[:10]],
            "extra_web_results": [],
            "structured_answer": [],
        }
        steps = [
            {"step_type": "INITIAL_QUERY", "content": {"goal_id": None, "query": self.question}, "uuid": ""},
            {
                "step_type": "SEARCH_RESULTS",
                "content": {"goal_id": None, "web_results": self.sources},
                "uuid": "",
            },
            {"step_type": "FINAL", "content": {"goal_id": None, "answer": json.dumps(final)}, "uuid": ""},
        ]
        return {
            "uuid": self.uuid,
            "frontend_uuid": self.uuid,
            "backend_uuid": f"b-{self.uuid}",
            "context_uuid": thread.uuid,
            "thread_url_slug": thread.slug,
            "thread_title": thread.title,
            "query_str": self.question,
            "query_source": "default",
            "text": json.dumps(steps),
            "status": "completed",
            "step_type": "FINAL",
            "mode": "copilot",
            "search_mode": "SEARCH",
            "display_model": thread.model,
            "sources": [],
            "updated_datetime": self.created,
            "entry_created_datetime": self.created + "+00:00",
            "collection_info": {"uuid": thread.space_uuid, "title": thread.space} if thread.space else None,
            "social_info": {"view_count": int(time.time() * 1000) % 997},
            "media_items": self.media,
            "attachments": self.attachments,
        }

    def render(self, thread: ReplayThread, schematized: bool, use_cases: set[str]) -> dict[str, Any]:
        """The entry as ``GET /rest/thread/<id>`` serves it for this request."""
        item = self.plain(thread)
        if self.shape is Shape.SUBAGENT_STUB:
            item.pop("text")
            stub = {"intended_usage": "subagent_result", "subagent_block": {}}
            item.update({"query_str": "", "blocks": [stub]})
            return item
        if self.shape is not Shape.CLASSIC:
            item.pop("text")
            item.update({"status": "COMPLETED", "mode": "COPILOT", "sources": {"sources": ["web"]}})
            if self.shape is Shape.WORKFLOW:
                item["search_mode"] = "RESEARCH"
        if schematized:
            item["blocks"] = self.blocks(use_cases)
        return item

    def _web_results(self) -> list[dict[str, Any]]:
        return [{**s, "meta_data": {"domain_name": "example"}, "is_attachment": False} for s in self.sources]

    def _workflow_block(self) -> dict[str, Any]:
        queries = {
            "type": "WORKFLOW_ITEM_QUERIES",
            "payload": {"queries_payload": {"queries": [self.question]}},
        }
        found = {
            "type": "WORKFLOW_ITEM_SOURCES",
            "payload": {"sources_payload": {"sources": self._web_results()}},
        }
        thinking = {
            "type": "WORKFLOW_ITEM_TEXT",
            "payload": {"text_payload": {"text": "Planning the report.", "variant": "thinking"}},
        }
        answer = {
            "type": "WORKFLOW_ITEM_TEXT",
            "payload": {
                "text_payload": {"text": self.answer[:5], "chunks": [self.answer], "variant": "answer"}
            },
        }
        return {
            "version": "1.0",
            "mode": "DEEP_RESEARCH",
            "status": "WORKFLOW_COMPLETED",
            "steps": [
                {"status": "COMPLETED", "title": "Searching", "items": [queries, found]},
                {"status": "COMPLETED", "title": "Writing", "items": [thinking, answer]},
            ],
        }

    def blocks(self, use_cases: set[str] | None = None) -> list[dict[str, Any]]:
        plan = {"intended_usage": "plan", "plan_block": {"progress": "DONE", "goals": [], "final": True}}
        if self.shape is Shape.WORKFLOW:
            wanted = use_cases is None or "workflow_widgets" in use_cases
            return [
                plan,
                *(
                    [{"intended_usage": "workflow_root", "workflow_block": self._workflow_block()}]
                    if wanted
                    else []
                ),
            ]
        half = len(self.answer) // 2
        if self.shape is Shape.SOURCES_MODE:
            rows = [{"citation": n, "web_result": s} for n, s in enumerate(self._web_results(), start=1)]
            sources = {"intended_usage": "sources_answer_mode", "sources_mode_block": {"rows": rows[::-1]}}
        else:
            sources = {
                "intended_usage": "web_results",
                "web_result_block": {"web_results": self._web_results()},
            }
        return [
            plan,
            sources,
            {"intended_usage": "ask_text_0_markdown", "markdown_block": {"answer": self.answer[:half]}},
            {"intended_usage": "ask_text_1_markdown", "markdown_block": {"answer": self.answer[half:]}},
            {
                "intended_usage": "ask_text",
                "markdown_block": {
                    "progress": "DONE",
                    "chunks": [],
                    "chunk_starting_offset": 0,
                    "answer": self.answer,
                    "inline_token_annotations": [],
                },
            },
        ]


@dataclass
class ReplayThread:
    uuid: str
    slug: str
    title: str
    entries: list[ReplayEntry]
    space: str | None = None
    last_query_datetime: str = "2025-07-26T00:50:10.801065"
    created_at: str = "2025-07-26T00:50:10.801065"
    model: str = "pplx_alpha"
    pinned: bool = False
    plain_only: bool = False
    gone: str | None = None
    space_uuid: str = ""

    def __post_init__(self) -> None:
        for index, entry in enumerate(self.entries):
            entry.uuid = entry.uuid or f"{self.uuid}-e{index}"
        self.space_uuid = self.space_uuid or f"c-{self.space}"

    def list_item(self, number: int, total: int) -> dict[str, Any]:
        """A ``list_ask_threads`` item with the keys real ones carry, and no ``is_pinned``."""
        first = json.dumps({"answer": self.entries[0].answer[:40] if self.entries else ""})
        collection = (
            {"uuid": self.space_uuid, "title": self.space, "emoji": "", "slug": self.space.lower()}
            if self.space
            else None
        )
        return {
            "thread_number": number,
            "uuid": self.uuid,
            "context_uuid": self.uuid,
            "frontend_uuid": self.uuid,
            "frontend_context_uuid": self.uuid,
            "slug": self.slug,
            "title": self.title,
            "first_answer": first,
            "answer_preview": self.entries[0].answer[:40] if self.entries else "",
            "last_query_datetime": self.last_query_datetime,
            "mode": "copilot",
            "status": "COMPLETED",
            "thread_access": 1,
            "has_next_page": True,
            "total_threads": total,
            "query_count": sum(e.shape is not Shape.SUBAGENT_STUB for e in self.entries),
            "first_entry_model_preference": "PPLX_ALPHA",
            "display_model": self.model,
            "expiry_time": None,
            "source": "default",
            "source_metadata": None,
            "thread_status": None,
            "is_mission_control": None,
            "stream_created_at": None,
            "search_focus": "internet",
            "search_recency_filter": None,
            "sources": ["web"],
            "featured_images": [],
            "read_write_token": f"rw-{self.uuid}",
            "author_image": "https://example.com/me.png",
            "author_username": "tester",
            "collection": collection,
            "social_info": {"view_count": 0, "fork_count": 0, "like_count": 0, "user_likes": False},
        }

    def official_markdown(self) -> str:
        """The official export's layout: logo, one H1 per query, ``[^t_n]`` footnotes, turns split by
        ``---``."""
        turns = []
        for t, entry in enumerate((e for e in self.entries if e.shape is not Shape.SUBAGENT_STUB), start=1):
            answer = entry.answer
            for n in range(len(entry.sources), 0, -1):
                answer = answer.replace(f"[{n}]", f"[^{t}_{n}]")
            defs = "\n\n".join(
                f"[^{t}_{n}]: {s.get('url') or s.get('link')}" for n, s in enumerate(entry.sources, start=1)
            )
            turns.append(
                f"# {entry.question}\n\n{answer}\n"
                f'<span style="display:none">[^{t}_99]</span>\n\n'
                f'<div style="text-align: center">⁂</div>\n\n{defs}\n'
            )
        logo = (
            '<img src="https://r2cdn.perplexity.ai/pplx-full-logo-primary-dark%402x.png" '
            'style="height:64px;margin-right:32px"/>\n\n'
        )
        return logo + "\n---\n\n".join(turns)


@dataclass
class LoggedRequest:
    method: str
    path: str
    query: dict[str, list[str]]
    body: Any
    status: int
    at: float
    user_agent: str = ""


@dataclass
class ReplayLibrary:
    """The server's state; tests edit it between runs (add a follow-up, delete a thread...)."""

    threads: list[ReplayThread]
    tokens: set[str] = field(default_factory=lambda: {"token-ok"})
    entries_page_size: int = 2
    total_threads: int | None = None
    list_page_cap: int | None = None
    list_ignores_offset: bool = False
    cloudflare: bool = False
    challenge_clears_at: float | None = None
    challenge_for_s: float | None = None
    faults: dict[str, list[int]] = field(default_factory=dict)
    retry_after: str = "1"
    log: list[LoggedRequest] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def thread(self, ident: str) -> ReplayThread | None:
        return next((t for t in self.threads if ident in (t.slug, t.uuid)), None)

    def challenged(self) -> bool:
        """Whether Cloudflare's challenge answers now: for good (``cloudflare``), until
        ``challenge_clears_at``, or for ``challenge_for_s`` from the first request that meets it."""
        if self.challenge_for_s is not None and self.challenge_clears_at is None:
            self.challenge_clears_at = time.monotonic() + self.challenge_for_s
        clears_at = self.challenge_clears_at
        return self.cloudflare or (clears_at is not None and time.monotonic() < clears_at)

    def take_fault(self, key: str) -> int | None:
        with self.lock:
            queue = self.faults.get(key)
            return queue.pop(0) if queue else None

    def requests(self, path: str) -> list[LoggedRequest]:
        return [r for r in self.log if r.path == path]


def _page(title: str, script: str, body: str = "") -> str:
    return (
        f"<!DOCTYPE html><html><head><title>{title}</title></head><body>{body}"
        f"<script>{script}</script></body></html>"
    )


_LIBRARY_JS = f"""
fetch('/rest/userinfo?version={API_VERSION}&source=default', {{credentials: 'include'}})
  .then(() => fetch('/rest/thread/list_ask_threads?version={API_VERSION}&source=default', {{
    method: 'POST', credentials: 'include', headers: {{'content-type': 'application/json'}},
    body: JSON.stringify({{limit: 20, ascending: false, offset: 0, search_term: ''}})}}))
  .then(r => r.json()).then(items => {{ document.body.dataset.threads = String(items.length); }})
  .catch(() => {{}});
"""

# Like Cloudflare's page: it re-checks after a moment and reloads once the check passes.
_CHALLENGE_JS = "setTimeout(() => location.reload(), 500);"

_LOGIN_JS = """
const button = document.getElementById('login');
if (button) button.addEventListener('click', () =>
  fetch('/test/login', {method: 'POST', credentials: 'include'}).then(() => location.reload()));
"""


def _thread_js(slug: str) -> str:
    return (
        f"fetch('/rest/thread/{slug}?with_parent_info=true&with_schematized_response=true"
        f"&version={API_VERSION}&source=default&limit=10&offset=0&from_first=true', "
        "{credentials: 'include'}).catch(() => {});"
    )


class ReplayHandler(BaseHTTPRequestHandler):
    library: ReplayLibrary
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        return

    # --- plumbing -------------------------------------------------------------------------------
    def _send(
        self, status: int, body: str | bytes, content_type: str, headers: dict[str, str] | None = None
    ) -> None:
        data = body.encode() if isinstance(body, str) else body
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)
        url = urlsplit(self.path)
        self.library.log.append(
            LoggedRequest(
                self.command,
                url.path,
                parse_qs(url.query),
                self._body,
                status,
                time.monotonic(),
                self.headers.get("user-agent", ""),
            )
        )

    def _json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        self._send(status, json.dumps(payload), "application/json", headers)

    def _html(self, status: int, html: str) -> None:
        self._send(status, html, "text/html; charset=utf-8")

    def _logged_in(self) -> bool:
        cookie = SimpleCookie(self.headers.get("cookie", ""))
        return COOKIE in cookie and cookie[COOKIE].value in self.library.tokens

    def _read_body(self) -> Any:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            return raw.decode(errors="replace")

    def do_GET(self) -> None:
        self._body = None
        self._route()

    def do_POST(self) -> None:
        self._body = self._read_body()
        self._route()

    # --- routing --------------------------------------------------------------------------------
    def _route(self) -> None:
        url = urlsplit(self.path)
        path, query = unquote(url.path), parse_qs(url.query)
        if self.library.challenged():
            return self._html(
                403, CHALLENGE_HTML.replace("</body>", f"<script>{_CHALLENGE_JS}</script></body>")
            )
        fault = self._fault_for(path, query)
        if fault is not None:
            return self._serve_fault(fault)
        if path == "/test/login" and self.command == "POST":
            return self._json(
                200,
                {"ok": True},
                {"set-cookie": f"{COOKIE}=token-ok; Path=/; HttpOnly; Secure; SameSite=Lax"},
            )
        if path == "/api/auth/session":
            return self._json(200, self._session() if self._logged_in() else {})
        if path in ("/", "/settings", "/library") or path.startswith("/search/"):
            return self._serve_page(path)
        if not path.startswith("/rest/"):
            return self._json(404, {"detail": "Not Found"})
        if not self._logged_in():
            return self._json(401, {"detail": {"error_code": "UNAUTHORIZED", "message": "Not authenticated"}})
        if path == "/rest/userinfo":
            return self._json(200, {"id": "user-1", "username": "tester", "subscription_status": "none"})
        if path == "/rest/thread/list_ask_threads":
            return self._list(pinned=False)
        if path == "/rest/thread/list_pinned_ask_threads":
            return self._list(pinned=True)
        if path == "/rest/thread/export" and self.command == "POST":
            return self._export()
        if path.startswith("/rest/thread/") and self.command == "GET":
            return self._thread(path.removeprefix("/rest/thread/"), query)
        return self._json(404, {"detail": "Not Found"})

    def _fault_for(self, path: str, query: dict[str, list[str]]) -> int | None:
        key = path
        if path == "/rest/thread/list_ask_threads" and isinstance(self._body, dict):
            key = f"{path}@{self._body.get('offset', 0)}"
        return self.library.take_fault(key)

    def _serve_fault(self, status: int) -> None:
        if status == 429:
            return self._json(429, {"detail": "Too Many Requests"}, {"retry-after": self.library.retry_after})
        if status == 200:
            return self._html(200, "<html><body>Something went wrong. Please refresh.</body></html>")
        if status == 403:
            return self._json(403, {"detail": {"error_code": "FORBIDDEN"}})
        return self._json(status, {"detail": f"error {status}"})

    def _session(self) -> dict[str, Any]:
        return {
            "expires": "2035-03-22T20:29:59.170506665Z",
            "preventUsernameRedirect": False,
            "user": {
                "email": "tester@example.com",
                "id": "0f8fad5b-d9cb-469f-a165-70867728950e",
                "image": "https://example.com/me.png",
                "name": "Tester",
                "org_role": "none",
                "org_uuid": "none",
            },
        }

    def _serve_page(self, path: str) -> None:
        if path == "/library":
            return self._html(200, _page("Library - Perplexity", _LIBRARY_JS))
        if path.startswith("/search/"):
            slug = path.removeprefix("/search/")
            if not self.library.thread(slug):
                return self._html(404, _page("Not found", ""))
            return self._html(200, _page("Thread - Perplexity", _thread_js(slug)))
        if self._logged_in():
            return self._html(200, _page("Settings", "", '<div data-testid="user-menu">Tester</div>'))
        return self._html(200, _page("Perplexity", _LOGIN_JS, '<button id="login">Log in</button>'))

    # --- REST -----------------------------------------------------------------------------------
    def _list(self, pinned: bool) -> None:
        if self.command != "POST":
            return self._json(400, {"detail": "Method Not Allowed"})
        body: dict[str, Any] = self._body if isinstance(self._body, dict) else {}
        threads = sorted(self.library.threads, key=lambda t: t.last_query_datetime, reverse=True)
        total = self.library.total_threads or len(threads)
        if pinned:
            items = [{**t.list_item(i, total), "is_pinned": True} for i, t in enumerate(threads) if t.pinned]
            return self._json(200, items)
        offset, limit = int(body.get("offset", 0)), int(body.get("limit", 20))
        limit = min(limit, self.library.list_page_cap or limit)
        offset = 0 if self.library.list_ignores_offset else offset
        page = threads[offset : offset + limit]
        return self._json(200, [t.list_item(offset + i, total) for i, t in enumerate(page)])

    def _thread(self, ident: str, query: dict[str, list[str]]) -> None:
        thread = self.library.thread(ident)
        if thread is None:
            return self._json(404, {"detail": {"error_code": "THREAD_NOT_FOUND"}})
        if thread.gone:
            return self._json(400, {"error": thread.gone, "message": "This entry has been deleted"})
        schematized = query.get("with_schematized_response") == ["true"] and not thread.plain_only
        entries = thread.entries if query.get("from_first", ["true"]) == ["true"] else thread.entries[::-1]
        cursor = query.get("cursor", [None])[0]
        start = json.loads(base64.urlsafe_b64decode(cursor))["o"] if cursor else 0
        size = self.library.entries_page_size
        if start:
            start -= 1  # cursor pages overlap by one entry, as real ones may: clients must dedupe
        page = entries[start : start + size + (1 if start else 0)]
        end = start + len(page)
        has_next = end < len(entries)
        next_cursor = base64.urlsafe_b64encode(json.dumps({"o": end, "t": thread.uuid}).encode()).decode()
        use_cases = set(query.get("supported_block_use_cases", []))
        rendered = [entry.render(thread, schematized, use_cases) for entry in page]
        return self._json(
            200,
            {
                "status": "success",
                "entries": rendered,
                "background_entries": [],
                "has_next_page": has_next,
                "next_cursor": next_cursor if has_next else None,
                "thread_metadata": {
                    "title": thread.title,
                    "created_at": thread.created_at,
                    "updated_at": thread.last_query_datetime,
                    "mode": "1",
                    "thread_status": None,
                    "locked_reason": None,
                },
            },
        )

    def _export(self) -> None:
        body: dict[str, Any] = self._body if isinstance(self._body, dict) else {}
        thread = self.library.thread(str(body.get("thread_uuid", "")))
        if thread is None:
            return self._json(404, {"detail": {"error_code": "THREAD_NOT_FOUND"}})
        content = base64.b64encode(thread.official_markdown().encode()).decode()
        return self._json(200, {"file_content_64": content, "filename": f"{thread.title}.md"})


class ReplayServer:
    """Runs the handler on 127.0.0.1 on a free port in a daemon thread."""

    def __init__(self, library: ReplayLibrary) -> None:
        handler = type("BoundReplayHandler", (ReplayHandler,), {"library": library})
        self.library = library
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self) -> ReplayServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
