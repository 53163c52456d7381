"""BEIR evaluation sets built from documentation that ships in Debian packages.

Each set pairs real FAQ questions (a section heading that asks something) with the section that
answers them; every other section of the same manuals is a distractor. Section bodies keep the
source's own hard-wrapped lines. ``bench/build_sets.py`` is the command; ``catalog`` says which
package and file each set reads, ``readers`` splits each source format into sections, ``beir``
turns sections into ``corpus.jsonl``, ``queries.jsonl``, ``qrels.tsv`` and a README.
"""
