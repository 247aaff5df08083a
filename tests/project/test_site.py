"""The documentation site as a browser shows it: built once, strictly, and its HTML read back for what Markdown
or the browser loses without an error. That means a star after η taken for emphasis, a ``<placeholder>`` taken
for a tag, a figure wider than the content column with no link to its full size, and an option summary that
disagrees with ``--help``."""

from __future__ import annotations

import os
import re
import struct
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from conftest import load_script

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
CONTENT_COLUMN_PX = 690
"""The content column's width in the Material theme at a desktop window (1400 px): a wider figure is scaled down."""
FENCE = re.compile(r"^```[^\n]*\n.*?^```", re.M | re.S)
CODE_SPAN = re.compile(r"`(?:[^`\n]|\n(?!\s*\n))*`")
"""A code span, which may run over a line break but not a blank line."""
IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)")
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
"""Elements without an end tag."""
HTML_TAGS = {"a", "br", "details", "summary", "sub", "sup", "img", "kbd", "span", "div", "p", "em", "strong"}
"""Tags a page may write as HTML on purpose; any other ``<word>`` in prose is a placeholder to show."""


def html_of(page: Path, site: Path) -> Path:
    return site / "index.html" if page == README else site / page.stem / "index.html"


def prose(page: Path) -> str:
    """A page's Markdown as a reader sees its text: fenced code, code spans and images' alt text left out."""
    text = FENCE.sub(" ", page.read_text(encoding="utf-8"))
    return IMAGE.sub(" ", CODE_SPAN.sub(" ", text))


class _Visible(HTMLParser):
    """The text a browser shows in the page's article (not the navigation's copy of its headings) outside code,
    emphasis that opens or closes right after an η, and each image with the link around it."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.text: list[str] = []
        self.images: list[tuple[str, str]] = []
        self.emphasis_after_eta = 0
        self._code = 0
        self._article = 0
        self._links: list[str] = []

    def _after_eta(self) -> bool:
        return bool(self.text) and self.text[-1].endswith("η")

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        if tag == "article" or self._article and tag not in VOID:
            self._article += 1
        if tag in ("code", "pre", "script", "style"):
            self._code += 1
        elif tag == "a":
            self._links.append(values.get("href", ""))
        elif tag == "img":
            self.images.append((values.get("src", ""), self._links[-1] if self._links else ""))
        elif tag in ("em", "strong") and self._after_eta():
            self.emphasis_after_eta += 1

    def handle_endtag(self, tag: str) -> None:
        if self._article and tag not in VOID:
            self._article -= 1
        if tag in ("em", "strong") and self._after_eta():
            self.emphasis_after_eta += 1
        if tag in ("code", "pre", "script", "style"):
            self._code -= 1
        elif tag == "a" and self._links:
            self._links.pop()

    def handle_data(self, data: str) -> None:
        if self._article and not self._code:
            self.text.append(data)


def visible(html: Path) -> _Visible:
    parser = _Visible()
    parser.feed(html.read_text(encoding="utf-8"))
    return parser


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site as `mkdocs build --strict` writes it."""
    out = tmp_path_factory.mktemp("site") / "site"
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)], cwd=ROOT,
                            capture_output=True, text=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert result.returncode == 0, result.stderr[-3000:]
    return out


def test_the_site_builds_every_page(site: Path) -> None:
    """mkdocs.yml builds every page of docs/ (the README as its home) with no broken link, anchor or page left out
    of the navigation."""
    assert (site / "index.html").is_file() and (site / "glossary" / "index.html").is_file()
    built = {path.parent.name for path in site.glob("*/index.html")}
    assert {page.stem for page in (ROOT / "docs").glob("*.md")} <= built


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_star_of_eta_survives_the_markdown(page: Path, site: Path) -> None:
    """Each η* a page writes in prose (``η\\*`` escaped or ``η*``) shows as η*: an unescaped star that pairs with
    another opens emphasis and both stars vanish."""
    written = len(re.findall(r"η\\?\*", prose(page)))
    shown = visible(html_of(page, site))
    assert "".join(shown.text).count("η*") >= written, f"{page.name}: an η* lost its star; write η\\* in prose"
    assert not shown.emphasis_after_eta, f"{page.name}: the star of an η* opened emphasis; write η\\* in prose"


@pytest.mark.parametrize("page", [page for page in PAGES
                                  if load_script("doc_numbers").references(page.read_text(encoding="utf-8"))],
                         ids=lambda p: p.name)
def test_every_number_a_page_refers_to_shows_as_its_measured_text(page: Path, site: Path) -> None:
    """Each ``{{ section.key }}`` outside inline code shows as the numbers file's text, in prose and in code."""
    numbers = load_script("doc_numbers")
    refs = numbers.references(page.read_text(encoding="utf-8"))
    html = html_of(page, site).read_text(encoding="utf-8")
    assert refs and not re.search(r"\{\{\s*[a-z0-9_]+\.[a-z0-9_]+\s*\}\}", "".join(visible(html_of(page, site)).text))
    kept = numbers.read_numbers()
    assert all(kept[section][key] in html for section, key in refs), page.name


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_placeholder_shows(page: Path, site: Path) -> None:
    """A ``<word>`` in prose (``runs/train-<time>``) shows as written, not swallowed as an HTML tag."""
    words = {w for w in re.findall(r"<([A-Za-z][^<>\n]*)>", prose(page)) if w.split()[0].lower() not in HTML_TAGS}
    shown = "".join(visible(html_of(page, site)).text)
    assert not [w for w in words if f"<{w}>" not in shown], f"{page.name}: write &lt;…&gt; or put it in a code span"


def _png_width(path: Path) -> int:
    with open(path, "rb") as handle:
        head = handle.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n", path
    return struct.unpack(">I", head[16:20])[0]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_a_figure_wider_than_the_column_links_to_its_full_size(page: Path, site: Path) -> None:
    html = html_of(page, site)
    for src, link in visible(html).images:
        if not src.endswith(".png"):
            continue
        width = _png_width((html.parent / src).resolve())
        assert width <= CONTENT_COLUMN_PX or link == src, f"{page.name}: {src} is {width} px and links to {link!r}"


def _options(command: str) -> set[str]:
    import typer.main

    from mutransfer.cli import app

    group = typer.main.get_command(app)
    return {opt for param in group.commands[command].params for opt in param.opts
            if opt.startswith("--") and opt != "--help"}


SUMMARY = re.compile(r"^mutransfer ([a-z-]+) .*\[--.*$", re.M)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_an_option_summary_lists_what_help_lists(page: Path) -> None:
    """A fenced line that sums a command up (``mutransfer transfer --width N [--from RUN_DIR] …``) names every
    option ``--help`` lists, and no other."""
    for block in FENCE.findall(page.read_text(encoding="utf-8")):
        block = re.sub(r"\n\s+(?=\[)", " ", block)  # a summary's continuation lines
        for match in SUMMARY.finditer(block):
            named = set(re.findall(r"--[a-z][a-z-]*", match.group(0).split("#")[0]))
            assert named == _options(match.group(1)), (page.name, match.group(0),
                                                       sorted(_options(match.group(1)) ^ named))


def test_the_command_line_page_lists_the_shipped_specs() -> None:
    from mutransfer.sweep.spec.sweep_spec import shipped_specs

    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert all(f"`{name}`" in text for name in shipped_specs()), "python scripts/cli_doc.py"
    assert text == load_script("cli_doc").render()


def test_the_404_page_s_links_reach_built_pages(site: Path) -> None:
    """Without a ``site_url`` (``MUTRANSFER_SITE_URL`` sets one) the 404 page's links start at the site's root,
    and each reaches a file of the built site."""
    links = re.findall(r'(?:href|src)="(/[^"#?]*)"', (site / "404.html").read_text(encoding="utf-8"))
    assert len(links) > 20
    missing = [link for link in links if not ((site / link.lstrip("/")).is_file()
                                              or (site / link.lstrip("/") / "index.html").is_file())]
    assert not missing, missing


def test_no_page_loads_anything_from_outside(site: Path) -> None:
    """No font, script or style from another host: the site reads the same offline."""
    for html in [site / "index.html", *site.glob("*/index.html")]:
        text = html.read_text(encoding="utf-8")
        outside = re.findall(r'<(?:link|script)[^>]*(?:href|src)="(https?://[^"]+)"', text)
        assert not outside, (html.parent.name, outside)
