"""`ctxkit replay LOG` (R-LOG-1…4): recorded traffic replayed as it was sent.

fixtures/logs/ holds one small hand-written log per input format and per verdict; the story of
each is in fixtures/logs/README.md, and each test here names the call where it happens. The
golden table and JSON of every log are snapshotted (review them like code).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest

from ctxkit import providers
from ctxkit.reports.logreplay import nearest_rank

from .conftest import FIXTURES, ROOT, ctxkit

LOGS = FIXTURES / "logs"
LOG_GALLERY = sorted(p for p in LOGS.iterdir() if p.suffix in (".jsonl", ".json", ".yaml"))


@pytest.fixture(autouse=True)
def _in_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # reports name logs by their relative paths


def data(name: str, *args: str) -> dict[str, Any]:
    r = ctxkit("replay", f"fixtures/logs/{name}", "--format", "json", *args)
    doc: dict[str, Any] = json.loads(r.out)
    return doc


def calls(name: str, *args: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = data(name, *args)["calls"]
    return found


@pytest.mark.parametrize("path", LOG_GALLERY, ids=[p.name for p in LOG_GALLERY])
def test_r_log_4_golden_table_and_json(path: Path, snapshot: Any) -> None:
    """R-LOG-4: the table and the JSON of each gallery log (reviewed by hand, see the README there)."""
    relative = str(path.relative_to(ROOT))
    table = ctxkit("replay", relative)
    doc = ctxkit("replay", relative, "--format", "json")
    assert {"table": table.out, "json": doc.out, "stderr": table.err} == snapshot


# --- R-LOG-1 input ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("verdicts.jsonl", "jsonl"),
        ("bodies.json", "jsonl"),
        ("cassette.yaml", "cassette"),
        ("cassette.json", "cassette"),
        ("trace.otlp.json", "otel"),
    ],
)
def test_r_log_1_format_recognised_by_content(name: str, fmt: str) -> None:
    assert data(name)["format"] == fmt


def test_r_log_1_gzip_is_read_transparently(tmp_path: Path) -> None:
    plain = (LOGS / "verdicts.jsonl").read_bytes()
    packed = tmp_path / "verdicts.jsonl.gz"
    packed.write_bytes(gzip.compress(plain, mtime=0))
    a = json.loads(ctxkit("replay", str(packed), "--format", "json").out)
    b = data("verdicts.jsonl")
    assert a["calls"] == b["calls"] and a["totals"] == b["totals"]


def test_r_log_1_log_format_overrides_recognition(tmp_path: Path) -> None:
    """A log that starts like nothing known is read as the format named."""
    path = tmp_path / "one.txt"
    path.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}], "model": "gpt-4o"}) + "\n")
    assert (
        json.loads(ctxkit("replay", str(path), "--format", "json", "--log-format", "jsonl").out)["totals"]["calls"] == 1
    )
    r = ctxkit("replay", str(path), "--log-format", "otel", expect=2)
    assert r.err.startswith("error: ") and r.err.count("\n") == 1


def test_r_log_1_a_bare_body_is_a_record_and_its_provider_is_recognised() -> None:
    rows = calls("bodies.json")
    assert [(c["provider"], c["endpoint"], c["model"]) for c in rows] == [
        ("gemini", "generateContent", "unknown"),
        ("gemini", "generateContent", "unknown"),
        ("openai", "chat.completions", "gpt-4o-mini"),
    ]


def with_bad_records(tmp_path: Path) -> Path:
    """verdicts.jsonl with line 3 a record of the wrong shape and line 5 not JSON."""
    lines = (LOGS / "verdicts.jsonl").read_text().splitlines()
    lines[2] = '{"request": {"messages": "not a list"}}'
    lines[4] = "{not json"
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_r_log_1_unreadable_record_is_one_located_error(tmp_path: Path) -> None:
    path = with_bad_records(tmp_path)
    r = ctxkit("replay", str(path), expect=2)
    assert (
        r.err == f"error: {path}:3: request/messages: expected a list, got a string (--skip-bad skips such records)\n"
    )
    assert r.out == ""


def test_r_log_1_skip_bad_counts_what_it_skipped_in_one_warning(tmp_path: Path) -> None:
    path = with_bad_records(tmp_path)
    r = ctxkit("replay", str(path), "--format", "json", "--skip-bad")
    assert json.loads(r.out)["totals"]["calls"] == 5
    assert "warning: skipped 2 record(s) that could not be read (--skip-bad)\n" in r.err


def test_r_log_1_skip_bad_is_refused_for_a_fixture() -> None:
    r = ctxkit("replay", "fixtures/replay/append.yaml", "--skip-bad", expect=2)
    assert "--skip-bad applies to logs" in r.err


def test_r_log_1_other_endpoints_are_skipped_and_counted() -> None:
    assert data("verdicts.jsonl")["skipped"] == {"embeddings": 1}
    assert data("cassette.yaml")["skipped"] == {"count_tokens": 1}
    assert data("cassette.json")["skipped"] == {"embeddings": 1}
    assert data("trace.otlp.json")["skipped"] == {"gen_ai execute_tool": 1}
    r = ctxkit("replay", "fixtures/logs/verdicts.jsonl")
    assert "warning: skipped 1 record(s) that are not model calls: 1 × embeddings\n" in r.err


# A cassette's URLs → (provider, endpoint, model the URL names), by the built-in specs' routes.
ROUTES = {
    "https://api.openai.com/v1/chat/completions": ("openai", "chat.completions", None),
    "https://api.together.xyz/v1/chat/completions": ("openai", "chat.completions", None),
    "https://api.openai.com/v1/responses": ("openai", "responses", None),
    "https://r.openai.azure.com/openai/deployments/gpt-4o/chat/completions?api-version=1": (
        "azure",
        "chat.completions",
        "gpt-4o",
    ),
    "https://proxy.local/openai/deployments/dep/chat/completions": ("azure", "chat.completions", "dep"),
    "https://r.openai.azure.com/openai/v1/chat/completions": ("azure", "chat.completions", None),
    "https://r.openai.azure.com/openai/v1/responses": ("openai", "responses", None),
    "https://api.anthropic.com/v1/messages": ("anthropic", "messages", None),
    "https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-3-haiku-v1%3A0/invoke": (
        "anthropic",
        "messages",
        "anthropic.claude-3-haiku-v1:0",
    ),
    "https://g.example/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse": (
        "gemini",
        "generateContent",
        "gemini-2.0-flash",
    ),
    "http://localhost:11434/api/chat": ("ollama", "api.chat", None),
    "https://api.openai.com/v1/embeddings": None,
    "https://api.anthropic.com/v1/messages/count_tokens": None,
    "https://g.example/v1beta/models/gemini-2.0-flash:countTokens": None,
    "http://localhost:11434/api/chat%0A": None,
}


@pytest.mark.parametrize("url", ROUTES)
def test_r_log_1_a_cassette_url_is_routed_by_the_provider_specs(url: str) -> None:
    """The most specific route wins: one that names its host (Azure's), then the longest match."""
    parts = urlsplit(url)
    assert providers.route(parts.netloc, unquote(parts.path)) == ROUTES[url]


def test_r_log_1_cassette_bodies_gzip_base64_and_streamed() -> None:
    """The YAML cassette's first call answers gzip in `!!binary`; its second streams server-sent
    events whose usage is read from the final event (message_delta: 6 output tokens), the input
    counts filled in from message_start. The JSON cassette's bodies are parsed JSON, a JSON
    string, a base64 string and a Responses stream (`response.completed`)."""
    yaml_calls = calls("cassette.yaml")
    assert [(c["reported_input_tokens"], c["reported_cached_tokens"], c["output_tokens"]) for c in yaml_calls] == [
        (1637, 0, 11),
        (1659, 1615, 6),
    ]
    assert [c["clock"] for c in yaml_calls] == ["2026-03-14T12:00:00Z", "2026-03-14T12:00:30Z"]
    json_calls = calls("cassette.json")
    assert [(c["endpoint"], c["reported_input_tokens"], c["output_tokens"]) for c in json_calls] == [
        ("responses", 81, 17),
        ("responses", 117, 14),
    ]


def test_r_log_1_otel_spans_are_compared_in_their_normalised_form() -> None:
    doc = data("trace.otlp.json")
    assert doc["normalised"] and "normalised form" in doc["normalised"]
    assert [c["endpoint"] for c in doc["calls"]] == ["otel", "otel"]
    assert [c["clock"] for c in doc["calls"]] == ["2026-05-05T16:53:20Z", "2026-05-05T16:53:22Z"]
    assert "note: calls read from OpenTelemetry" in ctxkit("replay", "fixtures/logs/trace.otlp.json").out


def test_r_log_1_a_fixture_is_still_a_fixture() -> None:
    assert "cause" in ctxkit("replay", "fixtures/replay/append.yaml").out
    assert json.loads(ctxkit("replay", "fixtures/replay/append.yaml", "--format", "json").out)["fixture"]


# --- R-LOG-2 calls and cache ------------------------------------------------------------


def test_r_log_2_time_order_ties_in_file_order(tmp_path: Path) -> None:
    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "x"}]}
    records = [
        {"at": "2026-03-14T10:00:05Z", "request": body},
        {"at": "2026-03-14T10:00:00Z", "request": body},
        {"at": "2026-03-14T10:00:05Z", "request": body},
        {"request": body},  # undated: stays after the last dated record before it
    ]
    path = tmp_path / "order.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    doc = json.loads(ctxkit("replay", str(path), "--format", "json").out)
    assert [c["source_index"] for c in doc["calls"]] == [1, 0, 2, 3]


def test_r_log_2_every_cause_a_body_can_show() -> None:
    """causes.jsonl: one call per cause, in this order (see fixtures/logs/README.md)."""
    assert [c["cause"] for c in calls("causes.jsonl")] == [
        "first_call",
        "append",
        "edit",
        "system_date",
        "system",
        "tools",
        "parameters",
        "head_dropped",
        "model",
        "other",
        "expired",
    ]


def test_r_log_2_the_tools_cause_is_the_tool_definitions_not_a_role_named_tools(tmp_path: Path) -> None:
    """The tool definitions are told apart from the messages by their place in the body, not by a
    kind named `tools`: a message whose role is literally "tools", edited in place, is an edit."""

    def body(note: str) -> dict[str, Any]:
        turns = [("user", "Plan the trip to Lisbon."), ("tools", note), ("user", "And the hotel?")]
        return {"model": "gpt-4o", "messages": [{"role": r, "content": c} for r, c in turns]}

    path = tmp_path / "roles.jsonl"
    path.write_text("".join(json.dumps({"request": body(n)}) + "\n" for n in ("first note", "second note")))
    call = json.loads(ctxkit("replay", str(path), "--format", "json").out)["calls"][1]
    assert (call["cause"], call["break"]["this"]["kind"]) == ("edit", "tools")


def test_r_log_2_parameters_names_the_setting() -> None:
    brk = calls("causes.jsonl")[6]["break"]
    assert brk == {
        "item": 0,
        "this": {"kind": "setting", "id": "prompt_cache_key", "segment": None},
        "candidate": {"kind": "setting", "id": "prompt_cache_key", "segment": None},
    }


def test_r_log_2_one_cache_per_provider_and_model_across_sessions() -> None:
    """causes.jsonl call 9 (session b) reads the prefix session a left in gpt-4o-mini's cache."""
    rows = calls("causes.jsonl")
    assert rows[9]["session"] == "b" and rows[9]["candidate"] == 7
    assert rows[9]["prefix_tokens"] > 0


def test_r_log_2_anthropic_breakpoints_top_level_cache_control_and_tool_choice() -> None:
    """anthropic.jsonl: the system block's breakpoint is written (call 0) and read (call 1); the
    top-level `cache_control` marks the last block (call 2 reads up to call 1's last breakpoint
    and writes the rest); a changed `tool_choice` leaves only the system block readable (call 3)."""
    rows = calls("anthropic.jsonl")
    system = rows[0]["cache_write_tokens"]
    assert [(c["cached_tokens"], c["cache_write_tokens"]) for c in rows] == [
        (0, system),
        (system, rows[1]["cache_write_tokens"]),
        (system + rows[1]["cache_write_tokens"], rows[2]["cache_write_tokens"]),
        (system, rows[2]["cache_write_tokens"] + rows[1]["cache_write_tokens"]),
    ]
    assert rows[3]["cause"] == "parameters" and rows[3]["break"]["this"]["id"] == "tool_choice"


def test_r_log_2_responses_api_items_one_per_input_item() -> None:
    """cassette.json call 1: tools, instructions, then each input item; the earlier string input
    equals the user message item, so the call only appends (break after the 3 shared items)."""
    second = calls("cassette.json")[1]
    assert second["cause"] == "append"
    assert second["break"]["item"] == 3 and second["break"]["this"]["id"] == "/input/1"


# --- R-LOG-3 against the provider -------------------------------------------------------


def test_r_log_3_every_verdict() -> None:
    """verdicts.jsonl (see fixtures/logs/README.md for each call's story)."""
    rows = calls("verdicts.jsonl")
    assert [c["verdict"] for c in rows] == [
        "agree",
        "agree",
        "provider_miss",
        "count_off",
        "disagree",
        "warm_elsewhere",
        None,
    ]


def test_r_log_3_anthropic_reported_input_adds_cache_creation_and_read() -> None:
    first = calls("anthropic.jsonl")[0]
    assert first["reported_input_tokens"] == 17 + 1601 + 0
    assert first["reported_cache_write_tokens"] == 1601


def test_r_log_3_count_error_and_totals() -> None:
    doc = data("verdicts.jsonl")
    first = doc["calls"][0]
    assert first["count_error"] == round((first["prompt_tokens"] - 1380) / 1380, 4)
    totals = doc["totals"]
    assert totals["verdicts"] == {"agree": 2, "count_off": 1, "provider_miss": 1, "warm_elsewhere": 1, "disagree": 1}
    assert totals["reported_cached_tokens"] == 1280 + 1536 + 1280 + 1152
    assert totals["reported_input_tokens"] == 1380 + 1404 + 1431 + 1457 + 1378 + 1281
    assert totals["reported_hit_rate"] == round(totals["reported_cached_tokens"] / totals["reported_input_tokens"], 4)
    assert set(totals["count_error"]) == {"openai"} and totals["count_error"]["openai"]["calls"] == 6


def test_r_log_3_p90_is_the_nearest_rank() -> None:
    assert nearest_rank([0.5, 0.1, 0.3, 0.2, 0.4, 0.6, 0.7, 0.8, 0.9, 1.0], 0.9) == 0.9
    assert nearest_rank([0.3], 0.9) == 0.3
    assert nearest_rank([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1], 0.9) == 1.0


def test_r_log_3_cost_from_reported_usage_beside_predicted() -> None:
    """anthropic.jsonl call 0 by hand (claude-sonnet-4-5: $3 input, $3.75 cache write, $15 output
    per million): 17 × 3 + 1,601 × 3.75 + 50 × 15 = 6,804.75 millionths."""
    first = calls("anthropic.jsonl")[0]
    assert first["reported_cost"] == pytest.approx(0.00680475)
    assert first["cost"] == pytest.approx(0.00680475)  # the prediction agrees exactly here


# --- R-LOG-4 output and options ---------------------------------------------------------


def test_r_log_4_json_fields() -> None:
    doc = data("verdicts.jsonl")
    call = doc["calls"][0]
    for key in ("session", "endpoint", "source_index", "reported_input_tokens", "reported_cached_tokens"):
        assert key in call
    assert call["session"] == "support-1" and call["endpoint"] == "chat.completions"
    for key in ("reported_hit_rate", "verdicts", "count_error", "reported_cost", "hit_rate", "causes"):
        assert key in doc["totals"]


@pytest.mark.parametrize(
    "option",
    [
        ["--max-input-tokens", "1000"],
        ["--leaf", "m1"],
        ["--now", "2026-01-01T00:00:00Z"],
        ["--compress-as", "100"],
        ["--payloads", "out"],
    ],
)
def test_r_log_4_window_options_are_refused(option: list[str]) -> None:
    r = ctxkit("replay", "fixtures/logs/verdicts.jsonl", *option, expect=2)
    assert r.err == (
        f"error: {option[0]} does not apply to a log of recorded traffic: its calls are replayed as they were "
        "sent, nothing is reassembled (R-LOG-4)\n"
    )


def test_r_log_4_model_reprices_every_call() -> None:
    """gpt-4o-mini costs $0.15 per million input tokens: the first call (no cache) by hand."""
    first = calls("verdicts.jsonl", "--model", "gpt-4o-mini")[0]
    assert first["model"] == "gpt-4o"  # the cache and the count stay the record's
    assert first["cost"] == pytest.approx((first["prompt_tokens"] * 0.15 + 20 * 0.6) / 1e6)


def test_r_log_4_tokenizer_and_provider_apply() -> None:
    approx = calls("verdicts.jsonl", "--tokenizer", "approx")[0]
    text = json.dumps(json.loads((LOGS / "verdicts.jsonl").read_text().splitlines()[0])["request"])
    assert approx["prompt_tokens"] != calls("verdicts.jsonl")[0]["prompt_tokens"]
    assert approx["prompt_tokens"] < len(text)  # counted as approx: about a quarter of the characters
    azure = calls("verdicts.jsonl", "--provider", "azure")
    assert {c["provider"] for c in azure} == {"azure"}


def test_r_log_4_calls_range() -> None:
    doc = data("causes.jsonl", "--calls", "2:4")
    assert [c["index"] for c in doc["calls"]] == [2, 3] and doc["totals"]["calls"] == 11


def test_r_log_3_usage_that_does_not_report_the_cache_gives_no_verdict(tmp_path: Path) -> None:
    """Ollama's usage, and OpenAI chat usage without `prompt_tokens_details` (compatible hosts,
    older API versions), say nothing of the cache: the count error stands, the verdict is null."""
    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hello"}]}
    records = [
        {"request": body, "usage": {"prompt_tokens": 9, "completion_tokens": 1}},
        {"request": body, "usage": {"prompt_tokens": 9, "prompt_tokens_details": {"cached_tokens": 0}}},
        {"provider": "ollama", "request": {**body, "model": "llama3"}, "usage": {"prompt_eval_count": 9}},
    ]
    path = tmp_path / "usage.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    rows = json.loads(ctxkit("replay", str(path), "--format", "json").out)["calls"]
    assert [(c["verdict"], c["reported_cached_tokens"]) for c in rows] == [(None, None), ("agree", 0), (None, None)]
    assert all(c["reported_input_tokens"] == 9 and c["count_error"] is not None for c in rows)


@pytest.mark.parametrize(
    ("control", "cause"),
    [({"type": "ephemeral"}, "expired"), ({"type": "ephemeral", "ttl": "1h"}, "append")],
    ids=["5m", "1h"],
)
def test_r_log_2_anthropic_ttl_of_cache_control_is_the_retention(tmp_path: Path, control: Any, cause: str) -> None:
    """A 20-minute gap: past the 5-minute default, within a `ttl: 1h` the earlier call asked for."""
    system = [{"type": "text", "text": "policy " * 1500, "cache_control": control}]
    body = {"model": "claude-sonnet-4-5", "max_tokens": 5, "system": system}
    first = {**body, "messages": [{"role": "user", "content": "a"}]}
    second = {**body, "messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]}
    records = [
        {"at": "2026-03-14T09:00:00Z", "request": first},
        {"at": "2026-03-14T09:20:00Z", "request": second},
    ]
    path = tmp_path / "ttl.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    rows = json.loads(ctxkit("replay", str(path), "--format", "json").out)["calls"]
    assert rows[1]["cause"] == cause
    assert (rows[1]["cached_tokens"] > 1500) == (cause == "append")


def test_r_log_2_openai_prompt_cache_retention_is_the_retention(tmp_path: Path) -> None:
    body = {"model": "gpt-4o", "messages": [{"role": "system", "content": "policy " * 1500}]}
    records = [
        {"at": "2026-03-14T09:00:00Z", "request": {**body, "prompt_cache_retention": "24h"}},
        {"at": "2026-03-14T12:00:00Z", "request": body},
    ]
    path = tmp_path / "retention.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    rows = json.loads(ctxkit("replay", str(path), "--format", "json").out)["calls"]
    assert rows[1]["cause"] == "append" and rows[1]["cached_tokens"] >= 1024


@pytest.mark.parametrize("name", ["bodies.json", "anthropic.jsonl"])
def test_r_log_2_a_logged_call_counts_as_its_body_does(name: str) -> None:
    """R-RPL-4 on a body as sent: the log replay's prompt equals `wire_tokens` of the same body,
    reply priming included (none for Gemini, none after an Anthropic prefill)."""
    from ctxkit.loading.traffic import read_log
    from ctxkit.translate.items import wire_tokens
    from ctxkit.translate.sent import body_meter, body_payload

    path = LOGS / name
    log = read_log(str(path), path.read_text(encoding="utf-8"))
    records = {r.source_index: r for r in log.records}
    replayed = calls(name)
    assert replayed and len(replayed) == len(records)
    for call in replayed:
        record = records[call["source_index"]]
        payload = body_payload(record.provider, record.body, record.model)
        meter = body_meter(record.provider, record.model)
        assert call["prompt_tokens"] == wire_tokens(payload, meter=meter), call["source_index"]
