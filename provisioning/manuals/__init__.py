"""Manuals shipped in Debian packages, read as sections (heading and body): the evaluation sets in
``bench/`` and the cross-encoder's training pairs are both built from them."""
