"""HTML manuals as sections: a heading (h1 to h4) and the text of the blocks up to the next one.

A block is a paragraph, a preformatted block, a list item or a definition; a block inside another
counts once, with the outer one. Navigation (``nav``, headers, footers) is left out.
"""

from __future__ import annotations

from provisioning.manuals.sections import Section

HEADINGS = {"h1", "h2", "h3", "h4"}
BLOCKS = {"p", "pre", "li", "dt", "dd", "td", "blockquote"}
SKIPPED = {"nav", "header", "footer", "script", "style"}


def html_sections(document: str, markup: bytes) -> list[Section]:
    import lxml.html

    root = lxml.html.fromstring(markup)
    sections: list[Section] = []
    chapter, heading, body = "", "", list[str]()
    for element in root.iter():
        if not isinstance(element.tag, str) or any(a.tag in SKIPPED for a in element.iterancestors()):
            continue
        if element.tag in HEADINGS:
            if heading:
                sections.append(Section(document, chapter, heading, "\n\n".join(body)))
            heading, body = " ".join(element.text_content().split()), []
            chapter = heading if element.tag == "h1" else chapter
        elif element.tag in BLOCKS and heading and not any(a.tag in BLOCKS for a in element.iterancestors()):
            text = element.text_content().strip()
            body.append(text if element.tag == "pre" else " ".join(text.split()))
    if heading:
        sections.append(Section(document, chapter, heading, "\n\n".join(body)))
    return [section for section in sections if section.body]
