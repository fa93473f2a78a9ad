"""R-FIX-1 graph checks: the shortcut for implicit parents (R-FIX-2's linear chain) finds what the full check finds."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxkit.loading.graph import check_references
from ctxkit.loading.refs import _messages
from ctxkit.loading.schema import JsonPath

IDS = st.sampled_from(["a", "b", "c", "d", "1", "2"])


@st.composite
def linear_documents(draw: st.DrawFn) -> dict[str, Any]:
    """Messages without `parent` keys (summaries name theirs), with repeated ids, attachments
    of known and unknown files, `summarizes_through`, project files and a leaf."""
    messages: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(0, 8))):
        role = draw(st.sampled_from(["user", "assistant", "user", "assistant", "summary"]))
        m: dict[str, Any] = {"id": draw(IDS), "role": role}
        if role == "summary":
            m["parent"] = draw(IDS)
            if draw(st.booleans()):
                m["summarizes_through"] = draw(IDS)
        if draw(st.booleans()):
            m["files"] = draw(st.lists(st.sampled_from(["f1", "f2", "nope"]), max_size=3))
        messages.append(m)
    doc: dict[str, Any] = {"messages": messages}
    if draw(st.booleans()):
        doc["project_files"] = draw(st.lists(st.sampled_from(["f1", "nope"]), max_size=2))
    if draw(st.booleans()):
        doc["leaf"] = draw(IDS)
    return doc


@settings(max_examples=300, deadline=None)
@given(doc=linear_documents())
def test_r_fix_1_implicit_parents_shortcut_finds_what_the_full_check_finds(doc: dict[str, Any]) -> None:
    found: list[tuple[JsonPath, str]] = []
    messages = _messages(doc["messages"], True, found)
    results = []
    for implicit in (True, False):
        problems = list(found)
        check_references(doc, messages, {"f1", "f2"}, problems, implicit_parents=implicit)
        results.append(sorted(set(problems)))
    assert results[0] == results[1]
