"""The pages link only to what the repository holds: every relative markdown link of README.md and docs/*.md
resolves to a file (or folder) inside the repository, every ``#anchor`` to a heading of the page it names, and no
page cites a path outside the repository (``../shared/...``, an absolute path of a machine): data sets are named
as the shared data folder, ``$SYNTAXFORMER_DATA``; papers by title."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]

#: Inline links ``[text](target)`` and images; reference definitions ``[label]: target``.
_INLINE = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$", re.MULTILINE)
#: A path that climbs out of its folder (``../x``), or an absolute path on a machine (``/work/...``, ``/home/...``).
_RELATIVE_UP = re.compile(r"(?<![\w/.$-])((?:\.\./)+[\w.$*{},-][\w./$*{},-]*)")
_ABSOLUTE = re.compile(r"(?<![\w.$-])(/(?:work|home|Users|mnt|scratch)/[\w./-]+)")
_FENCE = re.compile(r"^(```|~~~)")


def _strip_code_blocks(text: str) -> str:
    """The page without fenced code blocks (links are not links there; paths there are still checked below)."""
    out, fenced = [], False
    for line in text.splitlines():
        if _FENCE.match(line.strip()):
            fenced = not fenced
            out.append("")
            continue
        out.append("" if fenced else line)
    return "\n".join(out)


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"`|\*\*|\*|_(?=\w)|(?<=\w)_", "", heading.strip().lower())
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    anchors, seen = set(), {}
    for line in _strip_code_blocks(page.read_text(encoding="utf-8")).splitlines():
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            slug = _slug(m.group(1))
            n = seen.get(slug, 0)
            anchors.add(slug if n == 0 else f"{slug}-{n}")
            seen[slug] = n + 1
    anchors |= set(re.findall(r"<a\s+(?:name|id)=\"([^\"]+)\"", page.read_text(encoding="utf-8")))
    return anchors


def _links(page: Path) -> list[str]:
    text = _strip_code_blocks(page.read_text(encoding="utf-8"))
    return _INLINE.findall(text) + _REFERENCE.findall(text)


def _is_external(target: str) -> bool:
    return bool(re.match(r"^[a-zA-Z][a-zA-Z+.-]*:", target))  # https:, mailto:, ...


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_links_relative_links_resolve_inside_the_repository(page: Path) -> None:
    problems = []
    for target in _links(page):
        if _is_external(target):
            continue
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if REPO not in resolved.parents and resolved != REPO:
            problems.append(f"{target} (outside the repository)")
        elif not resolved.exists():
            problems.append(f"{target} (no such file)")
        elif anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved):
            problems.append(f"{target} (no heading with anchor #{anchor} in {resolved.name})")
    assert not problems, f"{page.relative_to(REPO)} has broken links: {problems}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_links_no_page_cites_a_path_outside_the_repository(page: Path) -> None:
    """Also in code blocks and backticks: a reader of the published repository has no ``../shared`` and no
    ``/work``."""
    outside = []
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        for m in _RELATIVE_UP.finditer(line):
            resolved = (page.parent / m.group(1).split("{")[0].split("*")[0]).resolve()
            if REPO not in resolved.parents and resolved != REPO:
                outside.append(f"line {number}: {m.group(1)}")
        outside += [f"line {number}: {m.group(1)}" for m in _ABSOLUTE.finditer(line)]
    assert not outside, (
        f"{page.relative_to(REPO)} cites paths outside the repository (name data as the shared "
        f"data folder, $SYNTAXFORMER_DATA/...; papers by title): {outside}"
    )


def test_links_checker_finds_what_it_should(tmp_path: Path) -> None:
    """The checks themselves: a missing file, a path outside the repository and a wrong anchor are found."""
    assert _links_of("see [a](docs/x.md) and [b](#top)\n\n[c]: ../y.md\n```\n[not](a link)\n```") == [
        "docs/x.md",
        "#top",
        "../y.md",
    ]
    assert _slug("The `SDOI` mask: what it is (§3.2)") == "the-sdoi-mask-what-it-is-32"
    assert _RELATIVE_UP.search("read `../shared/data/sst2`").group(1) == "../shared/data/sst2"
    assert _ABSOLUTE.search("from /work/shared/data") and not _ABSOLUTE.search("`$SYNTAXFORMER_DATA/sst2`")


def _links_of(text: str) -> list[str]:
    stripped = _strip_code_blocks(text)
    return _INLINE.findall(stripped) + _REFERENCE.findall(stripped)
