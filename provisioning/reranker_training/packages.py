"""Which Debian packages the cross-encoder learns from, and reading their manuals as sections.

No package any evaluation set is built from is trained on (``EVALUATION_PACKAGES``: the sets in
``bench/sets`` and pyfaq-dev, and the packages held back for evaluation elsewhere); ``check_disjoint``
refuses a list that names one.
"""

from __future__ import annotations

import re
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from provisioning.manuals.faqs import faq_sections
from provisioning.manuals.files import manual_text, read_text
from provisioning.manuals.html import html_sections
from provisioning.manuals.manpages import manpage_sections, render_manpage
from provisioning.manuals.readers import info_sections
from provisioning.manuals.sections import Section

# Info manuals, manual pages and FAQs of everyday tools and of large GNU manuals (Debian 12, main).
TRAINING_PACKAGES = (
    "apt", "automake", "bash", "bash-doc", "bc", "binutils", "binutils-doc", "bzip2", "coreutils",
    "cpio", "cron", "curl", "diffutils", "dpkg", "e2fsprogs", "ed", "file", "findutils", "gawk",
    "gettext", "global", "gnupg", "gnuplot-doc", "gnutls-doc", "grep", "guile-3.0-doc", "gzip",
    "indent", "iproute2", "iptables", "less", "libtool-doc", "lsof", "m4", "mailutils-doc", "make",
    "man-db", "mawk", "maxima-doc", "mount", "mtools", "nano", "netcat-openbsd", "nftables",
    "octave-doc", "openssh-client", "openssl", "parted-doc", "patch", "procps", "psmisc", "rsync",
    "screen", "sed", "sharutils", "socat", "strace", "systemd", "tar", "texinfo", "time", "tmux",
    "units", "util-linux", "valgrind", "wget", "xz-utils", "manpages",
    "postgresql-doc-15", "apache2-doc", "nginx-doc",
)  # fmt: skip
# The evaluation sets' packages (bench/sets, pyfaq-dev's Python documentation) and those held back for
# evaluation elsewhere: never trained on.
EVALUATION_PACKAGES = (
    "debian-faq", "debian-reference-en", "r-doc-info", "perl-doc", "zsh-common", "zsh-doc",
    "python3.11-doc", "python3-doc", "fetchmail", "ffmpeg-doc", "git-doc", "sqlite3-doc", "sudo",
)  # fmt: skip
FAQ_NAME = re.compile(r"faq", re.IGNORECASE)


def check_disjoint(packages: tuple[str, ...]) -> None:
    overlap = sorted(set(packages) & set(EVALUATION_PACKAGES))
    if overlap:
        raise ValueError(f"training packages include evaluation packages: {', '.join(overlap)}")


def unpack_packages(debs: Path, root: Path, packages: tuple[str, ...] = TRAINING_PACKAGES) -> list[str]:
    """``apt-get download`` each package into ``debs`` (kept: a second run reuses them) and unpack it
    under ``root``; returns ``name version`` for each, the record of what was trained on."""
    check_disjoint(packages)
    debs.mkdir(parents=True, exist_ok=True)
    missing = [p for p in packages if not list(debs.glob(f"{p}_*.deb"))]
    if missing:
        subprocess.run(["apt-get", "download", *missing], cwd=debs, check=True, capture_output=True)
    versions = []
    for package in packages:
        deb = sorted(debs.glob(f"{package}_*.deb"))[-1]
        subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], check=True)
        versions.append(" ".join(deb.name.split("_")[:2]))
    return versions


def manual_sections(root: Path) -> dict[str, list[Section]]:
    """Sections of every Info manual, English manual page (commands, files, overviews and
    administration: sections 1, 5, 7 and 8), plain-text FAQ and HTML page (English
    where a page comes in several languages) under ``root``, by document (``info:NAME``,
    ``man:NAME.N``, ``faq:PATH``, ``html:PATH``)."""
    documents: dict[str, list[Section]] = {}
    share = root / "usr" / "share"
    for path in sorted(share.glob("info/**/*.info*")):
        if re.search(r"\.info-\d+", path.name):
            continue  # a part of a split manual, read with its head
        name = f"info:{path.name.split('.info')[0]}"
        documents[name] = info_sections(name, manual_text(path))
    pages = sorted(share.glob("man/man[1578]/*"))
    with ThreadPoolExecutor(max_workers=4) as pool:  # man and groff run in processes of their own
        for path, text in zip(pages, pool.map(render_manpage, pages), strict=True):
            name = f"man:{path.name.removesuffix('.gz')}"
            documents[name] = manpage_sections(name, text)
    for path in sorted(share.glob("doc/**/*")):
        if path.is_file() and FAQ_NAME.search(path.name) and path.suffix in ("", ".gz", ".txt"):
            name = f"faq:{path.relative_to(share / 'doc')}"
            documents[name] = faq_sections(name, read_text(path))
        elif path.is_file() and (path.suffix == ".html" or path.name.endswith(".html.en")):
            name = f"html:{path.relative_to(share / 'doc')}"
            documents[name] = html_sections(name, path.read_bytes())
    return {name: sections for name, sections in documents.items() if sections}
