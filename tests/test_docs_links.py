"""The README and docs/ as a reader of a clone sees them: every relative link opens a file of the
repository (and, with an anchor, a heading of it), and the README stays short enough to be read
(issue 37: at most 150 lines, the rest in docs/).

Links are read as GitHub renders Markdown: inline links and images `[text](target)` and reference
definitions `[label]: target`, outside fenced code blocks and code spans; an anchor is a heading's
GitHub slug. Links with a scheme (https:, mailto:) leave the repository and are not followed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
README_MAX_LINES = 150

_FENCE = re.compile(r"^\s*(```|~~~)")
_CODE_SPAN = re.compile(r"(`+)(?:(?!\n[ \t]*\n).)*?\1", re.DOTALL)  # may wrap, not across a blank line
_INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_REFERENCE_DEFINITION = re.compile(r"^[ ]{0,3}\[[^\]]+\]:[ \t]*<?(\S+?)>?(?:[ \t]+.*)?$", re.MULTILINE)
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def _prose(text: str) -> str:
    """The text outside fenced code blocks, with code spans blanked: a link shown as code is not
    one."""
    lines, in_fence = [], False
    for line in text.splitlines():
        if _FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence:
            lines.append(line)
    return _CODE_SPAN.sub("", "\n".join(lines))


def _targets(text: str) -> list[str]:
    """Every link target of the text, in order: inline links and images, then reference
    definitions."""
    prose = _prose(text)
    return _INLINE_LINK.findall(prose) + _REFERENCE_DEFINITION.findall(prose)


def _github_slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it: the visible text lower-cased, punctuation other than
    '-' and '_' dropped, each space a hyphen."""
    visible = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "")
    kept = "".join(ch for ch in visible.lower() if ch.isalnum() or ch in " -_")
    return kept.replace(" ", "-")


def _anchors(text: str) -> set[str]:
    """Every heading's anchor; a repeated heading gets -1, -2, ... as on GitHub."""
    seen: dict[str, int] = {}
    result: set[str] = set()
    for heading in _heading_lines(text):
        slug = _github_slug(heading)
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        result.add(slug if count == 0 else f"{slug}-{count}")
    return result


def _heading_lines(text: str) -> list[str]:
    headings = []
    in_fence = False
    for line in text.splitlines():
        if _FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence and (match := _HEADING.match(line)):
            headings.append(match.group(2))
    return headings


def _documents() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def _judge(document: Path, target: str) -> str | None:
    """Why a link written in document does not resolve in a clone, or None when it does."""
    path_part, _, anchor = target.partition("#")
    linked = (document.parent / path_part).resolve() if path_part else document
    if REPO not in linked.parents:
        return f"{target}: outside the repository"
    if not linked.exists():
        return f"{target}: no such file"
    if anchor and linked.suffix == ".md" and anchor not in _anchors(linked.read_text()):
        return f"{target}: no heading #{anchor} in {linked.relative_to(REPO)}"
    return None


def _broken_links(document: Path) -> list[str]:
    """Each relative link of the document that does not resolve, with the reason."""
    verdicts = [_judge(document, target) for target in _targets(document.read_text())
                if not _SCHEME.match(target)]
    return [v for v in verdicts if v is not None]


@pytest.mark.parametrize("document", _documents(), ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_resolve_in_a_clone(document: Path) -> None:
    assert _broken_links(document) == []


def test_readme_is_short() -> None:
    lines = (REPO / "README.md").read_text().splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines; move detail to docs/"


def test_readme_links_are_found_and_checked() -> None:
    """The link reader sees the README's links (a reader that found none would pass every file)."""
    targets = _targets((REPO / "README.md").read_text())
    assert "docs/configuration.md" in targets
    assert "https://trio.readthedocs.io" in targets


def test_a_link_shown_as_code_is_not_followed() -> None:
    text = ("```\n[a](missing.md)\n```\nsee `[b](missing.md)`, `a span that\nwraps [e](missing.md)` and "
            "[c](real.md#part)\n\n[d]: other.md\n")
    assert _targets(text) == ["real.md#part", "other.md"]


def test_anchors_are_githubs_slugs() -> None:
    text = ("# Running a cluster\n## SASL/OAUTHBEARER with unsigned tokens (development only)\n"
            "## The `wirekafka/` package\n## Notes\n## Notes\n```\n# not a heading\n```\n")
    assert _anchors(text) == {"running-a-cluster", "sasloauthbearer-with-unsigned-tokens-development-only",
                             "the-wirekafka-package", "notes", "notes-1"}


def test_a_broken_link_is_reported() -> None:
    """A missing file, a missing heading and a path outside the repository are each named; a
    link to an existing heading passes."""
    document = REPO / "docs" / "configuration.md"
    assert [_judge(document, target) for target in
            ("no-such-page.md", "security.md#no-such-heading", "../../outside.md", "security.md#tls")] == [
        "no-such-page.md: no such file",
        "security.md#no-such-heading: no heading #no-such-heading in docs/security.md",
        "../../outside.md: outside the repository",
        None]


def _served_table(text: str) -> dict[str, tuple[int, int]]:
    """docs/compatibility.md's table of served APIs as name -> (lowest, highest) version; names
    listed together before one range share it ("DescribeAcls, CreateAcls, DeleteAcls (1-3)")."""
    start = text.index("| area | APIs (versions) |")
    table = text[start:text.index("\n\n", start)]
    served: dict[str, tuple[int, int]] = {}
    for row in table.splitlines()[2:]:
        cell = row.split("|")[2].split(":")[0]
        for names, low, high in re.findall(r"([A-Z]\w+(?:, [A-Z]\w+)*) \((\d+)(?:-(\d+))?", cell):
            for name in names.split(", "):
                served[name] = (int(low), int(high or low))
    return served


def test_compatibility_lists_exactly_what_is_served() -> None:
    """The served-API table is the broker's own table (served_versions), the ZooKeeper-mode
    inter-broker APIs included, so the page cannot claim an API that is not served or miss one."""
    from wirekafka.protocol import schema_meta
    from wirekafka.protocol.inter_broker import AlterPartitionRequest, ControlledShutdownRequest
    from wirekafka.protocol.served_versions import REQUEST_CLASSES, SERVED

    expected = {REQUEST_CLASSES[key].__name__.removesuffix("Request"): versions for key, versions in SERVED.items()}
    for zk_only in (AlterPartitionRequest, ControlledShutdownRequest):
        expected[zk_only.__name__.removesuffix("Request")] = schema_meta.valid_versions(zk_only)
    assert _served_table((REPO / "docs" / "compatibility.md").read_text()) == expected
