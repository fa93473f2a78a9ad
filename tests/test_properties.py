"""Property tests over random conversations: the assembler's invariants.

* the payload never exceeds the available tokens, added up by an independent cost
  model of the fixture (stored counts, approx arithmetic), not by ctxkit's meter;
* the kept history is a contiguous suffix of the older history (R-ASM-4);
* every tool result answers an earlier call (R-ASM-8);
* the reminder is the last message of the assembled context (R-REM-2);
* project messages sit right before the last user message, in R-ASM-7 order;
* a rule failure is the one the window was built to cause (R-ASM-2, R-ASM-3).

The strategy is steered. Each test case names a rule path (`MODES`); the strategy
draws a random conversation, then adds what that path needs (an assistant turn
with calls before the last question, a file attached to an old message, a project
too big to inject, ...) and sets the window so that the path must be taken: a first
run in a wide window measures the fixed parts, the last user message and the cost
of each older message; the window then leaves exactly the room that cuts the history
where the path needs it. Every example asserts that its path was taken, and records
every path it took with `hypothesis.event` (`--hypothesis-show-statistics` shows
the hit counts). The `explore` mode adds free random windows, tight to roomy.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections import Counter
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from ctxkit.errors import RuleError
from ctxkit.history.working import Kind, Origin, Segment, Working
from ctxkit.loading.config import Options
from ctxkit.loading.read import load_fixture
from ctxkit.pipeline import Result, run
from ctxkit.reports.budget import report as budget_report

from .helpers import readable, tool_calls

ORDER = [
    "system",
    "history",
    "custom_agent",
    "documents",
    "project_read_file",
    "forgotten_files",
    "last_user",
    "in_turn",
    "reminder",
]

# Each mode steers the examples to one rule path, which every example of the mode must take.
MODES = {
    "fixed_parts_too_big": "R-ASM-2 fixed parts too big",
    "last_user_too_big": "R-ASM-3 last user message does not fit",
    "truncated": "R-ASM-4 older history truncated",
    "last_n": "R-ASM-5 last-n cut",
    "non_vision": "R-ASM-6 image charged as a marker",
    "orphan": "R-ASM-8 orphan tool result dropped",
    "placeholder": "R-CONV-3 tool result placeholder",
    "evicted": "R-FILE-3 evicted for the list",
    "list_cut": "R-FILE-3 list cut short",
    "project_too_big": "R-PROJ-1 project not injected",
    "project_fits": "R-PROJ-2 project documents injected",
    "reminder": "R-REM-1 reminder sent",
    "custom_agent": "R-SYS-5 custom agent message",
    "summary": "R-TREE-3 summary applied",
    "explore": None,  # random windows, no path forced
}
PATHS = tuple(p for p in MODES.values() if p) + ("R-FILE-2 forgotten-files list",)

WIDE = 10**7  # a window every conversation of the strategy fits in


def approx(text: str) -> int:
    """R-FIX-3's approx tokenizer, restated: 0 for "", else max(1, len // 4)."""
    return max(1, len(text) // 4) if text else 0


MARKER = "[attached image \u2014 file_id: {id} \u2014 not shown: the current model does not support image input]"


@st.composite
def conversations(draw: Any, mode: str) -> dict[str, Any]:
    n_files = draw(st.integers(1, 5))
    files = [
        {
            "id": f"f{i}",
            "name": f"f{i}.txt",
            "kind": draw(st.sampled_from(["text", "text", "metadata_only", "image"])),
            "tokens": draw(st.integers(0, 150)),
        }
        for i in range(n_files)
    ]
    for f in files:
        if f["kind"] == "text":
            f["text"] = "x" * draw(st.integers(1, 40))
    messages: list[dict[str, Any]] = []
    call_n = 0
    for i in range(draw(st.integers(1, 14))):
        role = "user" if i == 0 else draw(st.sampled_from(["user", "assistant"]))
        m: dict[str, Any] = {
            "id": f"m{i}",
            "role": role,
            "text": "t" * draw(st.integers(0, 20)),
            "tokens": draw(st.integers(0, 200)),
        }
        if role == "user" and files and draw(st.booleans()):
            m["files"] = draw(st.lists(st.sampled_from([f["id"] for f in files]), max_size=3, unique=True))
        if role == "assistant" and draw(st.booleans()):
            names = ["internal_search", "get_x", "generate_image"]
            m["tool_calls"] = draw(tool_calls(call_n, names, st.just("r"), tokens=True))
            call_n += len(m["tool_calls"])
            if draw(st.booleans()):  # no answer text: the results are the newest part (R-ASM-8)
                m["text"] = ""
        messages.append(m)
    doc: dict[str, Any] = {
        "ctxkit": 1,
        "now": "2026-03-14T09:30:00Z",
        "model": {
            "provider": "openai",
            "name": "m",
            "max_input_tokens": WIDE,
            "supports_images": draw(st.booleans()),
        },
        "tokenizer": "approx",
        "settings": {
            "safety_margin": draw(st.sampled_from([0, 0.05, 0.1])),
            "last_n_user_messages": draw(st.sampled_from([None, None, 1, 2, 3])),
            "vector_db": draw(st.booleans()),
        },
        "prompts": {
            "system": draw(st.sampled_from(["", "S"])),
            "custom_agent": draw(st.sampled_from([None, "AGENT"])),
            "task": draw(st.sampled_from([None, "TASK"])),
            "datetime_aware": False,
        },
        "tools": draw(
            st.lists(st.sampled_from(["read_file", "read_file", "internal_search", "web_search", "open_url"]))
        ),
        "files": files,
        "messages": messages,
    }
    doc["tools"] = sorted(set(doc["tools"]))
    if files and draw(st.booleans()):
        doc["project_files"] = draw(st.lists(st.sampled_from([f["id"] for f in files]), max_size=3, unique=True))
    last_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
    if last_user > 0 and draw(st.booleans()):  # a summary that leaves the last user message
        upto = draw(st.integers(0, last_user - 1))
        doc["messages"].append(
            {
                "id": "s",
                "role": "summary",
                "parent": messages[upto + 1]["id"],
                "summarizes_through": messages[upto]["id"],
                "text": "SUM",
                "tokens": draw(st.integers(0, 50)),
            }
        )
    if draw(st.booleans()):
        doc["in_flight"] = [
            {"role": "assistant", "tool_calls": [{"id": "live", "name": "web_search", "args": {}, "tokens": 5}]},
            {"role": "tool", "tool_call_id": "live", "text": "res", "tokens": draw(st.integers(0, 100))},
        ]
    doc["_steer"] = _steering(draw, doc, mode)
    return doc


def _ask(doc: dict[str, Any], *, tokens: int, files: list[str] | None = None) -> None:
    """End the conversation with an assistant answer and a new last user message `x_q`."""
    doc["messages"].append({"id": "x_a", "role": "assistant", "text": "a", "tokens": 100})
    doc["messages"].append(
        {"id": "x_q", "role": "user", "text": "q", "tokens": tokens, **({"files": files} if files else {})}
    )


def _steering(draw: Any, doc: dict[str, Any], mode: str) -> dict[str, Any]:
    """Add what `mode` needs to the drawn conversation; return how `_steer` sets the window:
    `room` (tokens left for the older history; None: the fixed parts do not fit) or `cut`
    (the readable key of the older message the window must drop, with all before it)."""
    messages, files, settings_ = doc["messages"], doc["files"], doc["settings"]
    q_tokens = draw(st.integers(0, 20))
    roomy: dict[str, Any] = {"room": WIDE // 2}
    if mode in ("truncated", "orphan", "placeholder", "evicted", "list_cut"):
        settings_["last_n_user_messages"] = None  # the older history must be there to cut
        doc.pop("project_files", None)  # a project would change the fixed parts with the window
    if mode == "fixed_parts_too_big":
        doc.pop("project_files", None)
        doc["prompts"]["system"] = "SYSTEM " * 40
        return {"room": None}
    if mode == "last_user_too_big":  # a last user message larger than the shortfall
        doc.pop("project_files", None)
        _ask(doc, tokens=40 + q_tokens)
        return {"room": -draw(st.integers(1, 40))}
    if mode == "truncated":
        _ask(doc, tokens=q_tokens)
        return {"cut": "any", "pick": draw(st.integers(0, 10**6))}
    if mode in ("orphan", "placeholder"):  # calls, their results, then the last question
        call = {"id": "x_c", "name": "get_x", "args": {}, "tokens": draw(st.integers(10, 120)), "response": "r"}
        text = "" if mode == "orphan" else "done"
        messages.append({"id": "x_t", "role": "assistant", "text": text, "tokens": 10, "tool_calls": [call]})
        messages.append({"id": "x_q", "role": "user", "text": "q", "tokens": q_tokens})
        if mode == "placeholder":
            return roomy
        doc["tools"] = [t for t in doc["tools"] if t != "read_file"]  # evictions could take the results
        return {"cut": "x_t#calls0"}
    if mode in ("evicted", "list_cut"):  # a file on an older question, then the last question
        files.append({"id": "x_f", "name": "x.txt", "kind": "text", "text": "x", "tokens": 100})
        messages.append(
            {"id": "x_q0", "role": "user", "text": "q0", "tokens": draw(st.integers(100, 200)), "files": ["x_f"]}
        )
        _ask(doc, tokens=q_tokens)
        doc["tools"] = sorted({*doc["tools"], "read_file"})
        # evicted: the window drops the file; the list (50+ tokens) then needs room from q0.
        # list_cut: under 50 tokens of room, not even one entry fits.
        return {"cut": "x_q0#file0"} if mode == "evicted" else {"room": draw(st.integers(0, 40))}
    if mode in ("project_fits", "project_too_big"):
        size = draw(st.integers(1, 100)) if mode == "project_fits" else 10**8
        files.append({"id": "x_p", "name": "p.md", "kind": "text", "text": "p", "tokens": size})
        doc["project_files"] = ["x_p", *doc.get("project_files", [])]
        return roomy
    if mode == "non_vision":
        doc["model"]["supports_images"] = False
        files.append({"id": "x_i", "name": "i.png", "kind": "image", "tokens": draw(st.integers(0, 100))})
        _ask(doc, tokens=q_tokens, files=["x_i"])
        return roomy
    if mode == "last_n":
        settings_["last_n_user_messages"] = 1
        _ask(doc, tokens=q_tokens)
        return roomy
    if mode == "reminder":
        doc["prompts"]["task"] = "TASK"
    if mode == "custom_agent":
        doc["prompts"].update(system="S", custom_agent="AGENT")
    if mode == "summary":
        _ask(doc, tokens=q_tokens)
        through = draw(st.sampled_from([m["id"] for m in messages if m["role"] != "summary"][:-1]))
        messages.append(
            {"id": "x_s", "role": "summary", "parent": "x_a", "summarizes_through": through, "text": "S", "tokens": 1}
        )
    if mode == "explore":
        room = draw(st.one_of(st.integers(-40, 150), st.integers(0, 1500), st.just(WIDE // 2)))
        if room != WIDE // 2:  # in a smaller window the project may flip to a list of another size
            doc.pop("project_files", None)
        return {"room": room}
    return roomy


def _run(doc: dict[str, Any]) -> Result:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "f.json"
        path.write_text(json.dumps(doc), encoding="utf-8")
        return run(load_fixture(str(path)), Options())


def _window(available: int, margin: Decimal) -> int:
    """The smallest window whose available tokens (R-ASM-1) are at least `available`."""
    return max(1, int((Decimal(available) / (1 - margin)).to_integral_value(rounding=ROUND_CEILING)))


def _available(doc: dict[str, Any]) -> int:
    """R-ASM-1, restated on the fixture's decimals."""
    margin = Decimal(str(doc["settings"]["safety_margin"]))
    return int((doc["model"]["max_input_tokens"] * (1 - margin)).to_integral_value(rounding=ROUND_FLOOR))


class Costs:
    """What each payload message costs, worked out from the fixture alone (R-FIX-3, R-CONV-1…4,
    R-ASM-6): stored counts as written, generated texts with approx arithmetic."""

    def __init__(self, doc: dict[str, Any]) -> None:
        self.doc = doc
        self.files = {f["id"]: f for f in doc["files"]}
        self.messages = {m["id"]: m for m in doc["messages"]}
        self.vision = doc["model"]["supports_images"]

    def image(self, file_id: str) -> int:
        return int(self.files[file_id]["tokens"]) if self.vision else approx(MARKER.format(id=file_id))

    def of(self, key: str, text: str) -> int:
        """The cost of the working message `key` (readable form) whose text is `text`."""
        if key == "reminder":
            return approx(f"<system-reminder>\n{text}\n</system-reminder>")
        if key in ("system", "custom_agent", "forgotten_files", "project#read_file"):
            return approx(text)
        if key == "project#documents":
            return sum(int(self.files[f]["tokens"]) for f in self.project_texts())
        if key.startswith("in_flight#"):
            item = self.doc["in_flight"][int(key.split("#")[1])]
            return int(item.get("tokens", 0)) + sum(int(c["tokens"]) for c in item.get("tool_calls", []))
        ident, _, part = key.partition("#")
        m = self.messages[ident]
        if not part:  # the message itself: its stored count, its own images (not the project's)
            own = [f for f in m.get("files", []) if self.files[f]["kind"] == "image"]
            return int(m["tokens"]) + sum(self.image(f) for f in own)
        kind, n = re.fullmatch(r"(file|calls|result)(\d+)", part).groups()  # type: ignore[union-attr]
        if kind == "file":
            f = self.files[m["files"][int(n)]]
            return int(f["tokens"]) if f["kind"] == "text" else approx(text)
        if kind == "calls":
            return sum(int(c["tokens"]) for c in m["tool_calls"] if c.get("turn", 0) == int(n))
        call = m["tool_calls"][int(n)]  # a result: the placeholder (20), or the replayed response
        return approx(text) if call["name"] == "generate_image" else 20

    def project_texts(self) -> list[str]:
        return [f for f in self.doc.get("project_files", []) if self.files[f]["kind"] == "text"]

    def project_images(self, result: Result) -> int:
        last = result.assembly.segments[Segment.LAST_USER][0]
        return sum(self.image(i.file_id) for i in last.images if i.project)


def _steer(doc: dict[str, Any]) -> str | None:
    """Set the window as `doc["_steer"]` says; return the rule failure it must cause, if any.

    A first run in a wide window measures the fixed parts F, the last user message and
    in-flight messages T, and the older history (no project in the modes that need an
    exact window, so F does not change with it). A window with A available tokens then
    fails R-ASM-2 when F > A, else R-ASM-3 when T > A − F.
    """
    steer = doc.pop("_steer")
    margin = Decimal(str(doc["settings"]["safety_margin"]))
    wide = _run(doc)
    fixed = wide.assembly.available - wide.assembly.history_budget
    tail = sum(s["tokens"] for s in budget_report(wide)["segments"] if s["name"] in ("last_user", "in_turn"))
    room = steer.get("room")
    if "cut" in steer:
        costs = Costs(doc)
        older = [(readable(w.key), costs.of(readable(w.key), w.text)) for w in wide.assembly.converted.history]
        if steer["cut"] == "any":  # any older message that costs something
            paid = [i for i, (_, cost) in enumerate(older) if cost]
            at = paid[steer["pick"] % len(paid)]
        else:
            at = next(i for i, (key, _) in enumerate(older) if key == steer["cut"])
        room = sum(cost for _, cost in older[at + 1 :])
    if room is None:
        doc["model"]["max_input_tokens"] = _window(fixed - 1, margin)
    elif room != WIDE // 2:
        doc["model"]["max_input_tokens"] = _window(fixed + tail + room, margin)
    available = _available(doc)
    if fixed > available:
        return "R-ASM-2"
    return "R-ASM-3" if tail > available - fixed else None


def _check(doc: dict[str, Any]) -> list[str]:
    """Run one steered example, check the invariants, and return the rule paths it took."""
    failure = _steer(doc)
    try:
        r = _run(doc)
    except RuleError as exc:  # only the failure the window was built for
        assert failure is not None and f"({failure})" in str(exc), exc
        return [p for p in PATHS if p.startswith(failure)]
    assert failure is None, f"expected a {failure} failure"
    a = r.assembly
    costs = Costs(doc)

    # the budget, added up from the fixture, never exceeds the available tokens
    total = sum(costs.of(readable(w.key), w.text) for w in a.messages) + costs.project_images(r)
    assert total <= _available(doc)
    assert budget_report(r)["used_tokens"] == total

    # the kept older history is a contiguous suffix of the (last-n cut) older history
    fates = {readable(k): f for k, f in a.fates.items()}
    kept = [w.key for w in a.segments[Segment.HISTORY]]
    older = [w.key for w in a.converted.history if a.fates[w.key].fate != "last_n_cut"]
    orphans = {w.key for w in a.converted.history if a.fates[w.key].fate == "orphan"}
    if kept:
        start = older.index(kept[0])
        assert [k for k in older[start:] if k not in orphans] == kept
        assert all(a.fates[k].fate in ("truncated", "orphan") for k in older[:start])

    # every tool result answers an earlier call
    seen: set[str] = set()
    for m in r.payload.body["messages"]:
        for c in m.get("tool_calls") or []:
            seen.add(c["id"])
        if m["role"] == "tool":
            assert m["tool_call_id"] in seen

    # the reminder is last; the block before the last user message is in R-ASM-7 order
    origins = [w.origin for w in a.messages]
    if "reminder" in origins:
        assert origins[-1] == "reminder"
    rank = []
    for w in a.messages:
        seg = next(s for s, ws in a.segments.items() if w in ws)
        name = {"project#documents": "documents", "project#read_file": "project_read_file"}.get(
            w.key, str(seg) if seg != "project_files" else "documents"
        )
        rank.append(ORDER.index(name))
    assert rank == sorted(rank)

    rules = Counter((str(f.fate), f.rule) for f in fates.values())
    taken = {
        "R-ASM-4 older history truncated": rules[("truncated", "R-ASM-4")] > 0,
        "R-ASM-5 last-n cut": rules[("last_n_cut", "R-ASM-5")] > 0,
        "R-ASM-6 image charged as a marker": not costs.vision and any(w.images for w in a.messages),
        "R-ASM-8 orphan tool result dropped": rules[("orphan", "R-ASM-8")] > 0,
        "R-CONV-3 tool result placeholder": rules[("placeholder", "R-CONV-3")] > 0,
        "R-FILE-2 forgotten-files list": bool(a.segments[Segment.FORGOTTEN_FILES]),
        "R-FILE-3 evicted for the list": rules[("truncated", "R-FILE-3")] > 0,
        "R-FILE-3 list cut short": any("left out of the read_file list" in w for w in r.warnings),
        "R-PROJ-1 project not injected": a.project.documents is None and bool(costs.project_texts()),
        "R-PROJ-2 project documents injected": a.project.documents is not None,
        "R-REM-1 reminder sent": "reminder" in origins,
        "R-SYS-5 custom agent message": "custom_agent" in origins,
        "R-TREE-3 summary applied": a.branch.summary is not None,
    }
    return [p for p, hit in taken.items() if hit]


@pytest.mark.parametrize("mode", MODES)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_invariants(mode: str, data: st.DataObject) -> None:
    taken = _check(data.draw(conversations(mode)))
    for path in taken:
        event(path)
    assert MODES[mode] is None or MODES[mode] in taken, f"the {mode} example did not take its path"


# --- lazy conversion (R-ASM-4/5, R-FILE-1): the older history is converted only as far back as
# truncation reaches; what it decides must be what a full conversion decides.

LAZY_MODES = ("truncated", "last_n", "orphan", "placeholder", "evicted", "list_cut", "summary", "explore")


def _decided_in_full(r: Result) -> tuple[list[Working], dict[str, tuple[str, str]]]:
    """R-ASM-5 then R-ASM-4, restated over the whole converted older history: the messages
    they leave out, oldest first, and each one's (fate, rule)."""
    a = r.assembly
    older = list(a.converted.history)
    last_user = a.segments[Segment.LAST_USER][0]
    n = a.eff.settings.last_n_user_messages
    cut = 0
    users = [i for i, w in enumerate(older) if w.kind is Kind.USER and w.origin is Origin.MESSAGE]
    if n and len(users) >= n - 1:
        at, owner = (len(older), last_user.source_id) if n == 1 else (users[-(n - 1)], older[users[-(n - 1)]].source_id)
        while at and older[at - 1].origin is Origin.FILE and older[at - 1].source_id == owner:
            at -= 1  # the n-th user message keeps its pinned files
        cut = at
    room = a.history_budget - sum(a.meter.of(w) for w in (last_user, *a.converted.in_turn))
    start, used = len(older), 0
    while start > cut and used + a.meter.of(older[start - 1]) <= room:
        start -= 1
        used += a.meter.of(older[start])
    fates = {w.key: ("last_n_cut", "R-ASM-5") for w in older[:cut]}
    fates.update({w.key: ("truncated", "R-ASM-4") for w in older[cut:start]})
    return older[:start], fates


@pytest.mark.parametrize("mode", LAZY_MODES)
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_r_asm_4_lazy_conversion_decides_as_full_conversion(mode: str, data: st.DataObject) -> None:
    doc = data.draw(conversations(mode))
    if _steer(doc) is not None:
        return  # a rule failure: nothing assembled (the invariants test covers it)
    fresh = _run(doc).assembly  # read key by key first: nothing materialized yet
    a = _run(doc).assembly
    dropped, expected = _decided_in_full(_run(doc))
    evicted = [w for w in a.converted.history if a.fates[w.key].rule == "R-FILE-3"]
    assert bool(fresh.dropped) == bool(dropped + evicted)
    by_key = {w.key: fresh.fates.get(w.key) for w in a.converted.history}
    assert fresh.fates.get("system") is None and "m:1:?" not in fresh.fates
    assert by_key == {k: v for k, v in a.fates.items() if k in by_key}  # key by key = all at once

    assert list(a.dropped) == dropped + evicted
    for w in dropped:
        f = a.fates[w.key]
        assert (str(f.fate), f.rule, f.segment, f.notes) == (*expected[w.key], None, w.notes)
    left_out_warned = any("left out of the read_file list" in x for x in a.record.warnings)
    if a.segments[Segment.FORGOTTEN_FILES] and not left_out_warned:
        carried = {w.file_id for w in a.segments[Segment.HISTORY] if w.file_id}
        left = {w.file_id for w in dropped + evicted if w.file_id} - carried
        assert {f.id for f, known in a.forgotten if known} == left  # R-FILE-1 from stored messages
    rules = {rule for _, rule in expected.values()} | ({"R-FILE-3"} if evicted else set())
    event("lazy: left out by " + (", ".join(sorted(rules)) or "nothing"))
