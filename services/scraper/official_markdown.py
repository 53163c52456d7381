"""Perplexity's per-thread official Markdown export (docs/perplexity.md, "Official exports").

One ``# <query>`` section per turn; a query of several lines goes on below its H1 up to the first
blank line. Turns are split only where a ``---`` line is followed by the next turn's H1 (a rule
inside an answer is not a turn). Footnote markers come as ``[^<turn>_<n>]`` (older files) or
``[^<n>]`` (2026), defined as ``[^label]: <target>``; a target is a URL (with Markdown's backslash
escapes, ``?a=1\\&b=2``), a ``[name](url)`` link, or the name of a file the user attached
(``paste.txt``, ``image.jpg``). Each turn's markers become ``[1]``, ``[2]``, ... in the order of
their labels, pointing at the turn's numbered sources; attached files are also kept as attachments.
The logo ``<img>``, the hidden ``<span style="display:none">`` list of uncited sources and the
``⁂`` divider (``<div align="center">`` or ``<div style="text-align: center">``) are decoration.

The browser names a repeated download ``Title (1).md`` (or ``Title(1).md``, ``Title-1.md``): that is
the next part of a long thread only when its content overlaps the part before (it repeats a turn,
or it starts inside an answer, with no H1); otherwise it is another thread that has the same title.
"""

from __future__ import annotations

import re
from pathlib import Path

from services.scraper.models import Attachment, Source, Turn
from services.scraper.prose import code_ranges, inside, rewrite_prose

_PART = re.compile(r"^(?P<stem>.+?)(?: ?\((?P<paren>\d+)\)|-(?P<dash>\d+))$")
_TURN_SPLIT = re.compile(r"^[ \t]*-{3,}[ \t]*\n(?=(?:[ \t]*\n)*# )", re.MULTILINE)
_FOOTNOTE_DEF = re.compile(r"^\[\^(?P<label>[^\]\s]+)\]:[ \t]*(?P<target>.*)$")
_FOOTNOTE_REF = re.compile(r"\[\^(?P<label>[^\]\s]+)\](?!:)")
_DECORATION = (
    re.compile(r"^<img\b[^>]*>[ \t]*$", re.MULTILINE),
    re.compile(r'<span style="display:\s*none">.*?</span>', re.DOTALL),
    re.compile(r"^<div\b[^>]*>\s*⁂\s*</div>[ \t]*$", re.MULTILINE),
)
_MD_LINK = re.compile(r"^\[(?P<name>.*)\]\((?P<url>\S+)\)$")
_URL = re.compile(r"https?://\S+")
_MD_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")
_FILE_NAME = re.compile(r"^[^\s/\\]+\.(?P<ext>[A-Za-z0-9]{1,5})$")
_IMAGE_EXTENSIONS = frozenset({"png", "jpg", "jpeg", "gif", "webp", "heic", "bmp", "svg"})


def _label_key(label: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", label)) or (1 << 30,)


def _definition(target: str) -> tuple[Source, Attachment | None]:
    """A footnote's source, and the attachment when it names an attached file."""
    target = target.strip()
    link = _MD_LINK.match(target)
    if link:
        url = _MD_ESCAPE.sub(r"\1", link.group("url"))
        return Source(name=link.group("name").strip() or url, url=url), None
    found = _URL.search(target)
    if found:
        url = _MD_ESCAPE.sub(r"\1", found.group(0))
        name = (target[: found.start()] + target[found.end() :]).strip(" -–—:") or url
        return Source(name=name, url=url), None
    name = _MD_ESCAPE.sub(r"\1", target)
    file = _FILE_NAME.match(name)
    if not file:
        return Source(name=name, url=""), None
    kind = "image" if file.group("ext").lower() in _IMAGE_EXTENSIONS else "file"
    return Source(name=name, url=""), Attachment(kind=kind, caption=name)


def _split_question(lines: list[str]) -> tuple[str, list[str]]:
    """The H1 query (with the lines that continue it up to the first blank line) and the rest."""
    if not lines or not lines[0].startswith("# "):
        return "", lines
    question = [lines[0][2:].strip()]
    index = 1
    while index < len(lines) and lines[index].strip():
        question.append(lines[index].strip())
        index += 1
    return "\n".join(question), lines[index:]


def parse_official_turn(section: str) -> Turn | None:
    """One ``# query`` section: the answer with its footnote markers numbered, and its sources."""
    question, body = _split_question(section.strip().splitlines())
    code = code_ranges("\n".join(body), html=False)
    targets: dict[str, str] = {}
    answer_lines = []
    offset = 0
    for line in body:
        match = None if inside(code, offset) else _FOOTNOTE_DEF.match(line.strip())
        offset += len(line) + 1
        if match:
            targets.setdefault(match.group("label"), match.group("target"))
        else:
            answer_lines.append(line)
    text = "\n".join(answer_lines).strip()
    cited: list[str] = []

    def collect(prose: str) -> str:
        cited.extend(m.group("label") for m in _FOOTNOTE_REF.finditer(prose))
        return prose

    rewrite_prose(text, collect)
    labels = sorted({*targets, *cited}, key=_label_key)
    numbers = {label: n for n, label in enumerate(labels, start=1)}
    answer = rewrite_prose(text, lambda prose: _FOOTNOTE_REF.sub(lambda m: f"[{numbers[m['label']]}]", prose))
    sources, attachments = [], []
    for label in labels:
        source, attachment = (
            _definition(targets[label])
            if label in targets
            else (Source(name=f"source {label}", url=""), None)
        )
        sources.append(source)
        attachments += [attachment] if attachment else []
    if not question and not answer:
        return None
    return Turn(question=question or "Follow-up", answer=answer, sources=sources, attachments=attachments)


def _strip_decoration(prose: str) -> str:
    for pattern in _DECORATION:
        prose = pattern.sub("", prose)
    return prose


def undecorated(text: str) -> str:
    """``text`` without the export's logo, hidden span and divider (never touching code)."""
    return rewrite_prose(text, _strip_decoration, html=False).strip()


def turn_sections(text: str) -> list[str]:
    """``text`` cut where a ``---`` line is followed by an H1, outside code (a YAML document's
    ``---`` then ``# comment`` in a fence is code)."""
    code = code_ranges(text, html=False)
    sections, start = [], 0
    for match in _TURN_SPLIT.finditer(text):
        if not inside(code, match.start()):
            sections.append(text[start : match.start()])
            start = match.end()
    return [*sections, text[start:]]


def parse_official_markdown(text: str) -> list[Turn]:
    """The turns of one file (or of parts joined), a turn repeated across parts kept once."""
    turns: list[Turn] = []
    for section in turn_sections(undecorated(text)):
        turn = parse_official_turn(section)
        if turn and turn not in turns:
            turns.append(turn)
    return turns


def overlaps(earlier: list[Turn], part: str) -> bool:
    """``part`` continues ``earlier``: it starts inside an answer, or repeats one of its turns."""
    body = undecorated(part)
    if body and not body.startswith("# "):
        return True
    return any(turn in earlier for turn in parse_official_markdown(body))


def _part_of(key: str, stems: set[str]) -> tuple[str, int]:
    """``Title (1)``, ``Title(1)`` or ``Title-1`` is numbered 1 under ``Title`` when ``Title.md``
    exists."""
    match = _PART.match(key)
    if match and match.group("stem").rstrip() in stems:
        return match.group("stem").rstrip(), int(match.group("paren") or match.group("dash"))
    return key, 0


def group_by_title(files: list[Path], directory: Path) -> list[tuple[str, list[Path]]]:
    """``Title.md`` and the files the browser named after it, under ``Title`` (relative), in order."""
    stems = {p.with_suffix("").relative_to(directory).as_posix() for p in files}
    groups: dict[str, list[tuple[int, Path]]] = {}
    for path in files:
        key, number = _part_of(path.with_suffix("").relative_to(directory).as_posix(), stems)
        groups.setdefault(key, []).append((number, path))
    return [(key, [p for _, p in sorted(parts)]) for key, parts in sorted(groups.items())]


def join_part(joined: str, part: str) -> str:
    """A part that starts with a turn's H1 is a new turn; one that does not continues the answer."""
    part = undecorated(part)
    separator = "\n\n---\n\n" if part.startswith("# ") else "\n\n"
    return joined + separator + part


def chain_parts(texts: list[tuple[Path, str]]) -> list[tuple[Path, str]]:
    """Files of one title as threads: a file joins the first earlier thread its content overlaps,
    else it starts a thread of its own (named by its first file)."""
    chains: list[tuple[Path, str]] = []
    for path, text in texts:
        index = next(
            (i for i, (_, joined) in enumerate(chains) if overlaps(parse_official_markdown(joined), text)),
            None,
        )
        if index is None:
            chains.append((path, undecorated(text)))
        else:
            first, joined = chains[index]
            chains[index] = (first, join_part(joined, text))
    return chains
