"""Property tests over random conversations: the assembler's invariants.

* the payload never exceeds the available tokens (adding up what is in it);
* the kept history is a contiguous suffix of the older history (R-ASM-4);
* every tool result answers an earlier call (R-ASM-8);
* the reminder is the last message of the assembled context (R-REM-2);
* project messages sit right before the last user message, in R-ASM-7 order.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxkit.assembly.pipeline import run
from ctxkit.errors import RuleError
from ctxkit.loading.config import Options
from ctxkit.loading.read import load_fixture

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


@st.composite
def conversations(draw: Any) -> dict[str, Any]:
    n_files = draw(st.integers(0, 4))
    files = [
        {
            "id": f"f{i}",
            "name": f"f{i}.txt",
            "kind": draw(st.sampled_from(["text", "text", "metadata_only", "image"])),
            "tokens": draw(st.integers(0, 300)),
        }
        for i in range(n_files)
    ]
    for f in files:
        if f["kind"] == "text":
            f["text"] = "x" * draw(st.integers(1, 40))
    messages: list[dict[str, Any]] = []
    call_n = 0
    for i in range(draw(st.integers(1, 14))):
        role = draw(st.sampled_from(["user", "assistant"]))
        m: dict[str, Any] = {
            "id": f"m{i}",
            "role": role,
            "text": "t" * draw(st.integers(0, 20)),
            "tokens": draw(st.integers(0, 200)),
        }
        if role == "user" and files and draw(st.booleans()):
            m["files"] = draw(st.lists(st.sampled_from([f["id"] for f in files]), max_size=2, unique=True))
        if role == "assistant" and draw(st.booleans()):
            calls = []
            for _ in range(draw(st.integers(1, 3))):
                call_n += 1
                calls.append(
                    {
                        "id": f"c{call_n}",
                        "name": draw(st.sampled_from(["internal_search", "get_x", "generate_image"])),
                        "args": {"q": call_n},
                        "turn": draw(st.integers(0, 2)),
                        "tokens": draw(st.integers(0, 50)),
                        "response": "r",
                    }
                )
            m["tool_calls"] = calls
        messages.append(m)
    doc: dict[str, Any] = {
        "ctxkit": 1,
        "now": "2026-03-14T09:30:00Z",
        "model": {
            "provider": "openai",
            "name": "m",
            "max_input_tokens": draw(st.integers(300, 3000)),
            "supports_images": draw(st.booleans()),
        },
        "tokenizer": "approx",
        "settings": {
            "safety_margin": draw(st.sampled_from([0, 0.05, 0.1])),
            "last_n_user_messages": draw(st.sampled_from([None, 1, 2, 3])),
            "vector_db": draw(st.booleans()),
        },
        "prompts": {
            "system": draw(st.sampled_from(["", "S", None])),
            "custom_agent": draw(st.sampled_from([None, "AGENT"])),
            "task": draw(st.sampled_from([None, "TASK"])),
            "datetime_aware": False,
        },
        "tools": draw(
            st.lists(st.sampled_from(["read_file", "internal_search", "web_search", "open_url"]), unique=True)
        ),
        "files": files,
        "messages": messages,
    }
    if files and draw(st.booleans()):
        doc["project_files"] = draw(st.lists(st.sampled_from([f["id"] for f in files]), max_size=3, unique=True))
    if len(messages) > 2 and draw(st.booleans()):
        upto = draw(st.integers(0, len(messages) - 2))
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
    return doc


def _run(tmp_path_factory: Any, doc: dict[str, Any]) -> Any:
    path = tmp_path_factory.mktemp("p") / "f.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    try:
        return run(load_fixture(str(path)), Options())
    except RuleError:
        return None


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(doc=conversations())
def test_invariants(tmp_path_factory, doc):
    r = _run(tmp_path_factory, doc)
    if r is None:
        return
    a = r.assembly
    # budget: add up the counts of what is in the payload
    total = sum(a.meter.of(w) for w in a.messages) + sum(
        a.meter.image(i) for w in a.messages for i in w.images if i.project
    )
    assert total <= a.available
    assert r.budget()["used_tokens"] == total

    # the kept older history is a contiguous suffix of the (last-n cut) older history
    kept = [w.key for w in a.segments["history"]]
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
