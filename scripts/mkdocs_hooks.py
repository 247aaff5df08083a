"""MkDocs hooks: the site's home page is the README and its changelog page is CHANGELOG.md, each kept once at the
repository's top level and given to the site with its links rewritten from the repository's root to docs/; and
every measured number a page refers to as ``{{ section.key }}`` is shown from docs/data/numbers.yaml (its one owner,
written by the script that measures it; see ``scripts/doc_numbers.py``); every figure links to its full size (the
content column scales a wide one down until its labels cannot be read, and a phone more so)."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files

sys.path.insert(0, str(Path(__file__).resolve().parent))

from doc_numbers import read_numbers, shown  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PAGES = {"index.md": "README.md", "changelog.md": "CHANGELOG.md"}
"""Site page → the top-level file it is made from."""
FIGURE = re.compile(r'(<a [^>]*>\s*)?(<img [^>]*src="([^"]+\.png)"[^>]*>)')
CELL_CODE = re.compile(r"(<t[dh][^>]*>)(.*?)(</t[dh]>)", re.S)


def site_text(text: str) -> str:
    """A top-level Markdown file's text as a page of docs/: ``](docs/x.md)`` → ``](x.md)``."""
    return re.sub(r"\]\(docs/", "](", text)


def on_files(files: Files, config: Any) -> Files:
    for page, source in PAGES.items():
        files.append(File.generated(config, page, content=site_text((ROOT / source).read_text())))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    try:
        return shown(markdown, read_numbers())
    except KeyError as error:
        raise PluginError(f"{page.file.src_path}: {error.args[0]}") from None


def linked_figures(html: str) -> str:
    """Each ``<img>`` of a PNG not already inside a link wrapped in a link to the PNG itself."""
    def wrap(match: re.Match[str]) -> str:
        if match.group(1):
            return match.group(0)
        return f'<a href="{match.group(3)}" title="full size">{match.group(2)}</a>'

    return FIGURE.sub(wrap, html)


def breakable_cells(html: str) -> str:
    """Code in a table cell may break after ``.``, ``_``, ``=``, ``/`` and ``,`` (a ``<wbr>``) and nowhere else: a
    narrow column wraps ``optimizer.lr_mult.embedding=8.0`` at its dots, not mid-word."""
    def cell(match: re.Match[str]) -> str:
        body = re.sub(r"<code>(.*?)</code>", lambda c: "<code>" + re.sub(r"([._=/,])", r"\1<wbr>", c.group(1))
                      + "</code>", match.group(2), flags=re.S)
        return match.group(1) + body + match.group(3)

    return CELL_CODE.sub(cell, html)


def on_page_content(html: str, page: Any, config: Any, files: Files) -> str:
    return breakable_cells(linked_figures(html))
