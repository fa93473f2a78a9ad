"""Is an existing file an earlier ctxkit report? Decided from its parsed `<head>` (R-HTML-1).

Input: the first bytes of a file, decoded. Output: whether the document's head, as an
HTML parser reads it, has `<meta name="generator" content="ctxkit …">`. Comments,
text, scripts and attribute values are not tags, and the head ends at `</head>`,
`<body>` or the first tag or text that only a body holds, as browsers decide.
"""

from __future__ import annotations

from html.parser import HTMLParser

# The elements a document may hold before its body starts (the HTML standard's
# "in head" insertion mode, plus the <html> and <head> tags themselves).
HEAD_TAGS = frozenset({"html", "head", "meta", "title", "link", "style", "script", "base", "noscript", "template"})


RAW = frozenset({"title", "script", "style", "template"})  # their insides are not head tags


class _Head(HTMLParser):
    def __init__(self, generator: str) -> None:
        super().__init__(convert_charrefs=True)
        self.generator = generator
        self.found = False
        self.ended = False
        self._inside: list[str] = []  # open RAW elements

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.ended or self._inside:
            return
        if tag not in HEAD_TAGS:
            self.ended = True
        elif tag in RAW:
            self._inside.append(tag)
        elif tag == "meta":
            values = {k: v or "" for k, v in attrs}
            content = values.get("content", "").split()
            if values.get("name", "").lower() == "generator" and content[:1] == [self.generator]:
                self.found = True

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in RAW:
            self.handle_starttag(tag, attrs)

    def handle_endtag(self, tag: str) -> None:
        if self._inside:
            if tag == self._inside[-1]:
                self._inside.pop()
        elif tag == "head":
            self.ended = True

    def handle_data(self, data: str) -> None:
        if data.strip() and not self._inside:  # text outside title/script/style starts the body
            self.ended = True


def generator_in_head(text: str, generator: str) -> bool:
    """Whether `text` (a document's beginning) declares `generator` in its head."""
    parser = _Head(generator)
    parser.feed(text)
    return parser.found
