"""MkDocs hooks: the site's home page is the README and its changelog page is CHANGELOG.md, each kept once at the
repository's top level and given to the site with its links rewritten from the repository's root to docs/."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[1]
PAGES = {"index.md": "README.md", "changelog.md": "CHANGELOG.md"}
"""Site page → the top-level file it is made from."""


def site_text(text: str) -> str:
    """A top-level Markdown file's text as a page of docs/: ``](docs/x.md)`` → ``](x.md)``."""
    return re.sub(r"\]\(docs/", "](", text)


def on_files(files: Files, config: Any) -> Files:
    for page, source in PAGES.items():
        files.append(File.generated(config, page, content=site_text((ROOT / source).read_text())))
    return files
