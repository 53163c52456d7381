"""Real files for the loader tests, generated on the fly: PDFs with fpdf2, HTML pages, bad inputs."""

from __future__ import annotations

from pathlib import Path

from fpdf import FPDF


def write_pdf(
    path: Path, pages: list[str], title: str | None = None, user_password: str | None = None
) -> Path:
    """A PDF with one text page per item; with ``user_password`` it is encrypted (AES-128)."""
    pdf = FPDF()
    if title:
        pdf.set_title(title)
    pdf.set_font("helvetica", size=12)
    for text in pages:
        pdf.add_page()
        pdf.multi_cell(0, 8, text)
    if user_password is not None:
        from fpdf.enums import EncryptionMethod

        pdf.set_encryption(
            owner_password="owner", user_password=user_password, encryption_method=EncryptionMethod.AES_128
        )
    pdf.output(str(path))
    return path


ARTICLE_HTML = """<!doctype html>
<html><head><title>Rerankers in practice</title></head>
<body>
<nav><a href="/">Home</a> | <a href="/about">About us</a> | <a href="/shop">Shop our merchandise</a></nav>
<main><article>
<h1>Rerankers in practice</h1>
<p>A cross-encoder reads the question and the passage together and scores their relevance, which is
slower than a bi-encoder but far more precise when ordering a shortlist of candidate passages.</p>
<h2>Batching the pairs</h2>
<p>Scoring sixty-four pairs per batch keeps the CPU busy without exhausting memory on small machines.</p>
<pre><code>for batch in chunks(pairs, 64):
    scores.extend(model.predict(batch))
</code></pre>
</article></main>
<footer>Copyright 2024 Example Corp. All rights reserved. Subscribe to our newsletter.</footer>
</body></html>
"""
