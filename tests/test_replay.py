"""`ctxkit replay` (R-RPL-1…8): the calls, their clocks, the cache rules, causes and cost.

The gallery under fixtures/replay/ has one small fixture per cause and per limit; each test here
names the rule it checks and the call where the fixture's story happens.
"""

from __future__ import annotations

import random
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from ctxkit.history import tree
from ctxkit.loading.config import Options
from ctxkit.loading.read import load_fixture
from ctxkit.pipeline import RunWarning, WarningKind, run
from ctxkit.replay.calls import Planner
from ctxkit.replay.clocks import last_at
from ctxkit.replay.driver import Replay, replay
from ctxkit.replay.warned import Warned
from ctxkit.reports.replay import report

from .conftest import FIXTURES, ctxkit
from .helpers import write

REPLAY = FIXTURES / "replay"
REPLAY_GALLERY = sorted(REPLAY.glob("*.yaml"))


def run_replay(path: Path | str, **options: Any) -> Replay:
    compress_as = options.pop("compress_as", None)
    return replay(load_fixture(str(path)), Options(**options), compress_as=compress_as)


def rows(path: Path | str, **options: Any) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = report(run_replay(path, **options))["calls"]
    return calls


def last_body(fixture: Any, **options: Any) -> dict[str, Any]:
    """The body of the replay's last call (R-RPL-1: the fixture's own call)."""
    bodies: list[dict[str, Any]] = []
    replay(fixture, Options(**options), on_call=lambda i, call, result: bodies.append(result.payload.body))
    return bodies[-1]


def labels(path: Path | str, **options: Any) -> list[tuple[str, bool]]:
    return [(c["label"], c["on_branch"]) for c in rows(path, **options)]


# --- R-RPL-1 the calls -------------------------------------------------------------------


def test_r_rpl_1_one_call_per_tool_turn_and_per_in_flight_answer(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
        model: {provider: openai, name: gpt-4o}
        messages:
          - {id: u1, role: user, text: a}
          - id: a1
            role: assistant
            text: done
            tool_calls:
              - {id: c1, name: f, args: {}, turn: 0, response: r1}
              - {id: c2, name: f, args: {}, turn: 0, response: r2}
              - {id: c3, name: f, args: {}, turn: 5, response: r3}
          - {id: u2, role: user, text: b}
          - {id: u3, role: user, text: c}
        in_flight:
          - {role: assistant, tool_calls: [{id: c9, name: f, args: {}}]}
          - {role: tool, tool_call_id: c9, text: r9}
          - {role: assistant, text: thinking, tool_calls: [{id: c10, name: f, args: {}}]}
          - {role: tool, tool_call_id: c10, text: r10}
        """,
    )
    # two tool turns (0 and 5: gaps do not matter) → u1, u1·1, u1·2; u2 has no answer; u3 from in_flight
    assert labels(path) == [(x, True) for x in ["u1", "u1·1", "u1·2", "u2", "u3", "u3·1", "u3·2"]]
    calls = rows(path)
    assert [c["step"] for c in calls] == [0, 1, 2, 0, 0, 1, 2]


def test_r_rpl_1_loop_calls_carry_the_earlier_turns_in_full(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
        model: {provider: openai, name: gpt-4o}
        tokenizer: approx
        prompts: {system: "s", datetime_aware: false}
        messages:
          - {id: u1, role: user, text: a}
          - id: a1
            role: assistant
            text: done
            tool_calls:
              - {id: c1, name: f, args: {x: 1}, turn: 0, response: "full result"}
              - {id: c2, name: g, args: {}, turn: 1, response: "second"}
          - {id: u2, role: user, text: b}
        """,
    )
    bodies: list[dict[str, Any]] = []
    replay(load_fixture(str(path)), on_call=lambda i, call, result: bodies.append(result.payload.body))
    assert [m["role"] for m in bodies[1]["messages"]] == ["system", "user", "assistant", "tool"]
    assert bodies[1]["messages"][3]["content"] == "full result"
    assert bodies[2]["messages"][-1]["content"] == "second"
    assert bodies[3]["messages"][3]["content"].startswith("This tool call completed")  # R-CONV-3 in history


def test_r_rpl_1_edited_questions_come_first_off_the_branch() -> None:
    assert labels(REPLAY / "branch.yaml") == [("u1", True), ("u2", False), ("u2b", True)]


def test_r_rpl_1_last_call_is_byte_identical_to_assemble_for_the_gallery() -> None:
    from .conftest import GALLERY

    for path in GALLERY + REPLAY_GALLERY:
        fixture = load_fixture(str(path))
        try:
            expected = run(fixture).payload.body
        except Exception:
            continue  # fixtures that fail by rule (R-ASM-2/3) have no payload to compare
        assert last_body(fixture) == expected, path.name


def test_r_rpl_1_cli_payloads_match_assemble_output(tmp_path: Path) -> None:
    path = REPLAY / "placeholder.yaml"
    out = tmp_path / "bodies" / "deep"
    ctxkit("replay", str(path), "--payloads", str(out), "--format", "json")
    assert sorted(p.name for p in out.iterdir()) == ["0000.json", "0001.json", "0002.json"]
    assert (out / "0002.json").read_text(encoding="utf-8") == ctxkit("assemble", str(path)).out


# --- R-RPL-2 summaries in time, simulated compression ----------------------------------------


def test_r_rpl_2_a_summary_applies_from_the_next_question_on() -> None:
    calls = rows(REPLAY / "summary.yaml")
    assert [c["cause"] for c in calls] == ["first_call", "append", "summary"]
    assert calls[2]["break"]["this"] == {"kind": "assistant", "id": "s1", "segment": "history"}


def test_r_rpl_2_compress_as_adds_a_synthetic_summary() -> None:
    plain = rows(REPLAY / "long_session.yaml")
    simulated = rows(REPLAY / "long_session.yaml", compress_as=150)
    due = [c["label"] for c in plain if c["compression_due"]]
    assert due and all(c["step"] == 2 for c in plain if c["compression_due"])  # only on U's last call
    first = next(i for i, c in enumerate(simulated) if c["synthetic"])
    assert simulated[first - 1]["compression_due"] and simulated[first]["cause"] == "summary"
    assert all(c["synthetic"] for c in simulated[first:])
    assert any(c["truncated"] for c in plain) and not any(c["truncated"] for c in simulated)


def test_r_rpl_2_without_compress_as_nothing_is_synthetic() -> None:
    assert not any(c["synthetic"] for c in rows(REPLAY / "long_session.yaml"))


# --- R-RPL-3 the clock ----------------------------------------------------------------------


def test_r_rpl_3_clock_is_the_last_dated_message_then_now() -> None:
    calls = rows(REPLAY / "system_date.yaml")
    assert [c["clock"] for c in calls] == ["2026-03-14T23:58:00Z", "2026-03-15T00:01:30Z"]


def test_r_rpl_3_now_option_replaces_now_and_undated_calls_use_it(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
        model: {provider: openai, name: gpt-4o}
        messages:
          - {id: u1, role: user, text: a}
          - {id: a1, role: assistant, text: b}
          - {id: u2, role: user, text: c, at: "2026-03-14T10:00:00+02:00"}
          - {id: a2, role: assistant, text: d}
          - {id: u3, role: user, text: e}
        """,
    )
    calls = rows(path, now=load_fixture(str(REPLAY / "expired.yaml")).now)
    assert [c["clock"] for c in calls] == ["2026-03-14T13:30:00Z", "2026-03-14T08:00:00Z", "2026-03-14T13:30:00Z"]


@pytest.mark.parametrize("seed", range(6))
def test_r_rpl_3_clock_from_the_path_array_equals_the_walk(tmp_path: Path, seed: int) -> None:
    """`Clocks` reads the last dated live message off an array over the path's list: on a tree
    with edited questions (a new list per branch), a summary and messages dated here and there,
    every call's clock equals the walk over its live branch and loop."""
    rng = random.Random(seed)
    lines: list[str] = []
    parent: str | None = None
    users: list[tuple[str, str | None]] = []
    parents: dict[str, str | None] = {}
    for n in range(120):
        role = "user" if n % 2 == 0 else "assistant"
        if role == "user" and users and rng.random() < 0.15:  # an edited question: a sibling
            parent = users[-1][1]
        at = f', at: "2026-03-14T{n // 6:02d}:{n % 6 * 9:02d}:00Z"' if rng.random() < (0.3 if n < 70 else 0.02) else ""
        up = f", parent: {parent or 'null'}" if n else ""
        parents[f"m{n}"] = parent
        lines.append(f"  - {{id: m{n}, role: {role}, text: t{n}{up}{at}}}")
        if role == "user":
            users.append((f"m{n}", parent))
        parent = f"m{n}"
        if n == 80:  # a summary: the live branch starts after what it summarizes
            through = "m80"
            for _ in range(12):
                through = parents[through] or through
            lines.append(f"  - {{id: s, role: summary, parent: m80, summarizes_through: {through}, text: s}}")
    path = write(tmp_path, "model: {provider: openai, name: gpt-4o}\nmessages:\n" + "\n".join(lines) + "\n")
    fixture = load_fixture(str(path))
    planner = Planner(fixture, Options())
    seen = 0
    for call in planner.calls():
        if call.last:  # the fixture's own call is made at `now`
            continue
        branch = tree.select(call.fixture, call.fixture.leaf)
        expected = last_at(call.fixture.in_flight) or last_at(branch.live) or planner.clocks.now
        assert call.clock == expected, call.label
        seen += 1
    assert seen > 20


def test_r_rpl_3_times_going_backwards_warn_naming_both(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
        model: {provider: openai, name: gpt-4o}
        messages:
          - {id: u1, role: user, text: a, at: "2026-03-14T10:00:00Z"}
          - {id: a1, role: assistant, text: b, at: "2026-03-14T09:00:00Z"}
          - {id: u2, role: user, text: c}
        """,
    )
    r = ctxkit("replay", str(path), "--format", "json")
    assert "warning: " in r.err and "'a1'" in r.err and "'u1'" in r.err and "backwards" in r.err


def test_r_rpl_3_ttl_gap_expires_the_cache() -> None:
    calls = rows(REPLAY / "expired.yaml")
    assert calls[1]["cause"] == "expired" and calls[1]["candidate"] is None
    assert calls[1]["break"]["item"] == 0 and calls[1]["lost_tokens"] > 0


def test_r_rpl_5_ttl_seconds_override_keeps_the_cache_warm(tmp_path: Path) -> None:
    text = (REPLAY / "expired.yaml").read_text(encoding="utf-8")
    path = tmp_path / "warm.yaml"
    path.write_text(text.replace("tokenizer: approx", "tokenizer: approx\nsettings: {cache: {ttl_seconds: 7200}}"))
    calls = rows(path)
    assert calls[1]["cause"] == "append" and calls[1]["candidate"] == 0


# --- R-RPL-5 provider cache rules on hand-computed examples ------------------------------------


def _items(*tokens: int, breakpoints: tuple[int, ...] = (), names: str = "") -> tuple[Any, ...]:
    from ctxkit.translate.items import Item

    keys = names or "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    return tuple(Item(keys[n], t, "user", n in breakpoints) for n, t in enumerate(tokens))


def _anthropic(model: str = "claude-sonnet-4-5", **overrides: Any) -> Any:
    from ctxkit.loading.domain import CacheRules
    from ctxkit.replay import cache

    return cache.Cache(cache.rules("anthropic", model, CacheRules(**overrides)))


def test_r_rpl_5_openai_rounds_down_to_128_from_1024() -> None:
    from ctxkit.loading.domain import CacheRules
    from ctxkit.replay import cache

    c = cache.Cache(cache.rules("openai", "gpt-4o", CacheRules()))
    c.add(_items(1000, 300, 50), None)
    hit = c.add(_items(1000, 300, 77, names="abX"), None)
    # common prefix = items a, b = 1000 + 300 = 1300 tokens; 1300 // 128 * 128 = 10 × 128 = 1280
    assert (hit.prefix_tokens, hit.cached_tokens, hit.limit) == (1300, 1280, "increment")
    hit = c.add(_items(1000, 9, names="aY"), None)
    # common prefix = item a alone = 1000 tokens < 1024: nothing is cached
    assert (hit.prefix_tokens, hit.cached_tokens, hit.limit) == (1000, 0, "minimum")
    hit = c.add(_items(1000, 300, 1, names="abQ"), None)
    # the longest common prefix is with call 1 (a, b; call 0 ties and the latest wins): 1,300 → 1,280
    assert (hit.candidate, hit.prefix_tokens, hit.cached_tokens) == (1, 1300, 1280)


def test_r_rpl_5_anthropic_reads_the_stored_breakpoint_and_writes_the_rest() -> None:
    c = _anthropic()
    first = c.add(_items(600, 500, 100, breakpoints=(1,)), None)
    # the prefix up to the breakpoint (items 0-1) = 600 + 500 = 1,100 ≥ 1,024: written, nothing read
    assert (first.cached_tokens, first.write_tokens) == (0, 1100)
    second = c.add(_items(600, 500, 100, 200, breakpoints=(2,)), None)
    # reads the stored 1,100 (it ends 1 item before the breakpoint at item 2, within 20);
    # writes its own prefix up to item 2 (600 + 500 + 100 = 1,200) minus what it read: 100
    assert (second.prefix_tokens, second.cached_tokens, second.write_tokens) == (1200, 1100, 100)
    assert second.limit is None  # the common prefix goes past the stored breakpoint: not a provider limit


def test_r_rpl_5_anthropic_minimum_is_per_model() -> None:
    c = _anthropic()
    c.add(_items(500, 400, breakpoints=(1,)), None)  # 500 + 400 = 900 < 1,024: not stored
    hit = c.add(_items(500, 400, 300, breakpoints=(2,)), None)
    # nothing to read; its own prefix 500 + 400 + 300 = 1,200 ≥ 1,024 is written
    assert (hit.prefix_tokens, hit.cached_tokens, hit.write_tokens, hit.limit) == (900, 0, 1200, "minimum")
    haiku = _anthropic("claude-3-5-haiku-20241022")
    assert haiku.rules.min_tokens == 2048  # 1,200 would not be written for this model
    assert haiku.add(_items(500, 400, 300, breakpoints=(2,)), None).write_tokens == 0
    assert _anthropic("claude-haiku-4-5").rules.min_tokens == 4096
    assert _anthropic("claude-haiku-4-5", min_tokens=10).rules.min_tokens == 10  # settings.cache wins


def test_r_rpl_5_anthropic_lookback_counts_the_breakpoint_itself() -> None:
    """The documentation's example: a breakpoint on block 35 checks blocks 35 down to 16 (20
    positions, its own the first), so a prefix stored at block 16 is read and one at block 15 is not."""
    blocks = [1100, *[10] * 35]  # blocks 0..35: 1,100 + 35 × 10 = 1,450 tokens up to block 35
    c = _anthropic()
    c.add(_items(*blocks[:17], breakpoints=(16,)), None)  # stores blocks 0-16: 1,100 + 16 × 10 = 1,260
    near = c.add(_items(*blocks, breakpoints=(35,)), None)
    # 35 - 16 = 19 < 20: read 1,260; write up to block 35 (1,450) minus the read: 190
    assert (near.cached_tokens, near.write_tokens, near.limit) == (1260, 190, None)
    c = _anthropic()
    c.add(_items(*blocks[:16], breakpoints=(15,)), None)  # stores blocks 0-15: 1,250
    far = c.add(_items(*blocks, breakpoints=(35,)), None)
    # 35 - 15 = 20: block 15 is the 21st position back, outside the lookback; nothing read, 1,450 written
    assert (far.prefix_tokens, far.cached_tokens, far.write_tokens, far.limit) == (1250, 0, 1450, "lookback")


def test_r_rpl_5_anthropic_parallel_tool_use_run_is_one_position() -> None:
    """A run of consecutive tool_use blocks is one lookback position, and so is a run of
    tool_result blocks: eleven parallel calls add two positions, not twenty-two."""
    from ctxkit.translate.items import Item

    def items(n: int, breakpoint: int) -> tuple[Item, ...]:
        runs = [None, None, None, *["tool_use"] * 11, *["tool_result"] * 11, None]  # tools, system, user, …
        tokens = [600, 500, 40, *[10] * 22, 30]
        return tuple(Item(f"k{i}", tokens[i], "user", i == breakpoint, runs[i]) for i in range(n))

    c = _anthropic()
    c.add(items(3, 2), None)  # stores tools + system + the user block (items 0-2): 1,140 tokens
    hit = c.add(items(26, 25), None)
    # positions: item 2 → 2, tool_use run (3-13) → 3, tool_result run (14-24) → 4, item 25 → 5:
    # 5 - 2 = 3 < 20, so the stored 1,140 is read (by blocks it would be 23, beyond the lookback)
    assert (hit.cached_tokens, hit.write_tokens, hit.limit) == (1140, 220 + 30, None)
    one_by_one = _anthropic()
    one_by_one.add(items(3, 2), None)
    plain = tuple(i._replace(run=None) for i in items(26, 25))
    assert one_by_one.add(plain, None).limit == "lookback"  # the same blocks counted one by one


def test_r_rpl_5_ollama_compares_with_the_previous_call_only() -> None:
    from ctxkit.loading.domain import CacheRules
    from ctxkit.replay import cache

    c = cache.Cache(cache.rules("ollama", "llama3.1", CacheRules()))
    c.add(_items(5, 6, names="ab"), None)
    c.add(_items(7, names="z"), None)
    hit = c.add(_items(5, 6, names="ab"), None)
    assert (hit.candidate, hit.prefix_tokens, hit.cached_tokens) == (1, 0, 0)


def test_r_rpl_5_lookback_gallery_fixture() -> None:
    """Eleven tool rounds one after another: 22 positions between the prefix stored at u1 and the
    breakpoint at the end of a1, so the question u2 reads nothing (R-RPL-5 lookback)."""
    calls = rows(REPLAY / "lookback.yaml")
    assert [c["cached_tokens"] > 0 for c in calls[1:12]] == [True] * 11  # each round reads the u1 prefix
    assert calls[12]["limit"] == "lookback" and calls[12]["cached_tokens"] == 0


def test_r_rpl_5_parallel_tool_calls_stay_within_the_lookback(tmp_path: Path) -> None:
    """The same eleven checks made in parallel (one round): two positions, so u2 reads the stored
    prefix; this is what the earlier lookback fixture wrongly showed as beyond the lookback."""
    text = (REPLAY / "lookback.yaml").read_text(encoding="utf-8")
    parallel = tmp_path / "parallel.yaml"
    parallel.write_text(re.sub(r"turn: \d+, ", "", text), encoding="utf-8")
    calls = rows(parallel)
    assert len(calls) == 3 and calls[2]["limit"] is None and calls[2]["cached_tokens"] == calls[1]["cached_tokens"] > 0


def test_r_rpl_5_increment_and_minimum_gallery_fixtures() -> None:
    inc = rows(REPLAY / "increment.yaml")[1]
    assert (inc["limit"], inc["cached_tokens"] % 128, inc["cached_tokens"] < inc["prefix_tokens"]) == (
        "increment",
        0,
        True,
    )
    low = rows(REPLAY / "minimum.yaml")[1]
    assert (low["limit"], low["cached_tokens"]) == ("minimum", 0) and 0 < low["prefix_tokens"] < 1024


# --- R-RPL-6 one test per cause ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "call", "cause", "rule"),
    [
        ("append.yaml", 0, "first_call", "R-RPL-1"),
        ("append.yaml", 2, "append", "R-RPL-6"),
        ("system_date.yaml", 1, "system_date", "R-SYS-2"),
        ("system.yaml", 1, "system", "R-SYS-1"),
        ("tools.yaml", 1, "tools", "R-TR-9"),
        ("summary.yaml", 2, "summary", "R-TREE-3"),
        ("branch.yaml", 2, "branch", "R-RPL-1"),
        ("truncation.yaml", 3, "truncation", "R-ASM-4"),
        ("placeholder.yaml", 2, "placeholder", "R-CONV-3"),
        ("image_cap.yaml", 1, "image_cap", "R-TR-6"),
        ("drift.yaml", 1, "drift", "R-ASM-7"),
        ("expired.yaml", 1, "expired", "R-RPL-5"),
    ],
)
def test_r_rpl_6_cause(name: str, call: int, cause: str, rule: str) -> None:
    c = rows(REPLAY / name)[call]
    assert (c["cause"], c["rule"]) == (cause, rule)


def test_r_rpl_6_break_sides_and_lost_tokens() -> None:
    c = rows(REPLAY / "truncation.yaml")[3]
    assert c["break"] == {
        "item": 1,
        "this": {"kind": "user", "id": "u2", "segment": "history"},
        "candidate": {"kind": "user", "id": "u1", "segment": "history"},
    }
    assert c["truncated"] and c["lost_tokens"] > 0 and c["candidate"] == 2
    drift = rows(REPLAY / "drift.yaml")[1]
    assert drift["break"]["candidate"] == {"kind": "user", "id": None, "segment": "custom_agent"}


def test_r_rpl_6_grow_only_conversation_is_all_append_with_nothing_lost() -> None:
    calls = rows(REPLAY / "append.yaml")
    assert [(c["cause"], c["lost_tokens"]) for c in calls[1:]] == [("append", 0), ("append", 0)]
    assert calls[2]["cached_tokens"] == calls[2]["prefix_tokens"] > 0


# --- R-RPL-7 output and cost ------------------------------------------------------------------


def test_r_rpl_7_cost_of_a_known_call_by_hand() -> None:
    c = rows(REPLAY / "append.yaml")[1]
    assert (c["prompt_tokens"], c["cached_tokens"], c["output_tokens"]) == (88, 41, 20)
    # gpt-4o in the genai-prices data: $2.50 input, $1.25 cached input, $10 output per million tokens
    # (88 − 41) × 2.50 + 41 × 1.25 + 20 × 10 = 117.5 + 51.25 + 200 = 368.75 → $0.00036875
    assert Decimal(str(c["cost"])) == Decimal("0.00036875")
    # without the cache: 88 × 2.50 + 200 = 420 → $0.00042
    assert Decimal(str(c["cost_without_cache"])) == Decimal("0.00042")


def test_r_rpl_7_anthropic_cost_counts_reads_and_writes_by_hand() -> None:
    c = rows(REPLAY / "lookback.yaml")[1]
    p, cached, written, out = c["prompt_tokens"], c["cached_tokens"], c["cache_write_tokens"], c["output_tokens"]
    # claude-sonnet-4-5: $3 input, $0.30 cache read, $3.75 cache write, $15 output per million
    expected = (Decimal(p - cached - written) * 3 + cached * Decimal("0.3") + written * Decimal("3.75") + out * 15) / (
        10**6
    )
    assert Decimal(str(c["cost"])) == expected


def test_r_rpl_7_settings_prices_price_every_call(tmp_path: Path) -> None:
    text = (REPLAY / "append.yaml").read_text(encoding="utf-8")
    path = tmp_path / "priced.yaml"
    prices = "settings: {cache: {min_tokens: 32, increment: 1}, prices: {input: 1, cached_input: 0.5, output: 2}}"
    path.write_text(text.replace("settings: {cache: {min_tokens: 32, increment: 1}}", prices), encoding="utf-8")
    c = rows(path, model="my-own-model")[1]
    # (88 − 41) × 1 + 41 × 0.5 + 20 × 2 = 47 + 20.5 + 40 = 107.5 per million
    assert Decimal(str(c["cost"])) == Decimal("0.0001075")


@pytest.mark.parametrize(
    ("provider", "model"),
    [("openai", "gpt-4o"), ("anthropic", "claude-3-5-haiku-20241022"), ("anthropic", "claude-sonnet-4-5")],
)
def test_r_rpl_7_cost_per_call_equals_the_package_arithmetic(provider: str, model: str) -> None:
    """Replay prices untiered models from unit rates looked up once (R-RPL-9); every cost must
    still equal, as a value, what `genai_prices.calc_price` gives for the same usage."""
    import random

    import genai_prices

    from ctxkit.providers import spec
    from ctxkit.replay.cost import Pricer

    pricer = Pricer(provider, model, None)
    rng = random.Random(7)
    clock = load_fixture(str(REPLAY / "append.yaml")).now
    for _ in range(40):
        prompt = rng.randint(0, 300_000)
        cached = rng.randint(0, prompt)
        written = rng.randint(0, prompt - cached) if provider == "anthropic" else 0
        output = rng.choice([0, rng.randint(1, 8_000)])
        usage = genai_prices.Usage(
            input_tokens=prompt, cache_read_tokens=cached, cache_write_tokens=written, output_tokens=output
        )
        expected = genai_prices.calc_price(
            usage, model, provider_id=spec(provider).prices_id, genai_request_timestamp=clock
        ).total_price
        assert pricer.cost(prompt, cached, written, output, clock) == Decimal(expected)


@pytest.mark.parametrize(("provider", "model"), [("openai", "gpt-4o"), ("anthropic", "claude-sonnet-4-5")])
def test_r_rpl_7_cost_without_cache_of_every_call_equals_pricing_it_afresh(provider: str, model: str) -> None:
    """A call that reads nothing from the cache and writes nothing to it shares one Decimal for
    its cost with and without the cache (R-RPL-9: replay keeps a row per call); every call's cost
    without the cache is still the price of its prompt and output alone, as text."""
    from ctxkit.replay.cost import Pricer

    fixture = load_fixture(str(REPLAY / "long_session.yaml"))
    replayed = replay(fixture, Options(provider=provider, model=model))
    pricer = Pricer(provider, model, fixture.settings.prices)
    shared = 0
    for c in replayed.calls:
        afresh = pricer.cost(c.prompt_tokens, 0, 0, c.output_tokens, c.clock)
        assert str(c.cost_without_cache) == str(afresh)
        shared += c.cost_without_cache is c.cost
    assert 0 < shared < len(replayed.calls)  # calls with and without cache reads or writes


def test_r_rpl_7_output_tokens_follow_the_stored_conversation() -> None:
    calls = rows(REPLAY / "placeholder.yaml")
    # (u1, 0) produced the next turn's call: its argument tokens; (u1, 1) produced the answer; the last: null
    assert [c["output_tokens"] is None for c in calls] == [False, False, True]
    assert calls[1]["output_tokens"] == len("It left the Leipzig hub this morning.") // 4


def test_r_rpl_7_unknown_model_gives_null_cost_and_one_warning() -> None:
    r = ctxkit("replay", str(REPLAY / "append.yaml"), "--model", "house-model-7", "--format", "json")
    assert r.err.count("warning:") == 1 and "house-model-7" in r.err
    import json

    data = json.loads(r.out)
    assert {c["cost"] for c in data["calls"]} == {None}
    assert data["totals"]["cost"] is None and data["totals"]["cost_without_cache"] is None


def test_r_rpl_7_ollama_runs_locally_for_free() -> None:
    calls = rows(REPLAY / "append.yaml", provider="ollama", model="llama3.1")
    assert {c["cost"] for c in calls} == {0.0}


# --- R-RPL-8 output and bad input ----------------------------------------------------------------


def test_r_rpl_8_json_keys_and_totals() -> None:
    import json

    data = json.loads(ctxkit("replay", str(REPLAY / "long_session.yaml"), "--format", "json").out)
    keys = {
        "index", "user_message", "step", "on_branch", "clock", "prompt_tokens", "prefix_tokens", "cached_tokens",
        "cache_write_tokens", "output_tokens", "cost", "candidate", "break", "cause", "rule", "limit",
        "lost_tokens", "truncated", "compression_due", "synthetic",
    }  # fmt: skip
    assert keys <= set(data["calls"][0])
    t = data["totals"]
    assert t["calls"] == len(data["calls"]) == 26
    assert t["prompt_tokens"] == sum(c["prompt_tokens"] for c in data["calls"])
    assert t["hit_rate"] == round(t["cached_tokens"] / t["prompt_tokens"], 4)
    lost = [c["lost_tokens"] for c in t["causes"]]
    assert lost == sorted(lost, reverse=True) and t["causes"][0]["cause"] == "truncation"


def test_r_rpl_8_calls_prints_a_slice_but_totals_cover_all() -> None:
    import json

    data = json.loads(ctxkit("replay", str(REPLAY / "long_session.yaml"), "--calls", "-3:", "--format", "json").out)
    assert [c["index"] for c in data["calls"]] == [23, 24, 25] and data["totals"]["calls"] == 26
    table = ctxkit("replay", str(REPLAY / "long_session.yaml"), "--calls", ":2").out
    assert " u1·1 " in table and " u2 " not in table and "calls 26;" in table


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--calls", "1-2"], "error: --calls '1-2': expected a range A:B"),
        (["--calls", "7:9"], "error: --calls '7:9': selects no call (this replay has 3 calls, 0 to 2)"),
        (["--calls", "2:1"], "error: --calls '2:1': selects no call"),
        (["--compress-as", "0"], "error: --compress-as '0': expected a positive integer"),
        (["--compress-as", "1.5"], "error: --compress-as '1.5': expected a positive integer"),
    ],
)
def test_r_rpl_8_bad_options_exit_2_with_one_line_and_write_nothing(
    tmp_path: Path, args: list[str], message: str
) -> None:
    out = tmp_path / "bodies"
    r = ctxkit("replay", str(REPLAY / "append.yaml"), "--payloads", str(out), *args, expect=2)
    assert r.out == "" and r.err.count("\n") == 1 and r.err.startswith(message)
    assert not out.exists()


def test_r_rpl_3_bad_at_exits_2_located(tmp_path: Path) -> None:
    path = write(tmp_path, 'model: {provider: openai, name: gpt-4o}\nmessages: [{id: u, role: user, at: "noon"}]\n')
    r = ctxkit("replay", str(path), expect=2)
    assert r.err == f"error: {path}:/messages/0/at: not an ISO 8601 date-time with a zone: 'noon'\n"


def test_r_rpl_8_table_shows_writes_for_anthropic_only() -> None:
    assert " write " in ctxkit("replay", str(REPLAY / "lookback.yaml")).out
    assert " write " not in ctxkit("replay", str(REPLAY / "append.yaml")).out


def test_r_asm_9_a_replay_warns_once_per_kind_with_a_count(tmp_path: Path) -> None:
    """Issue 19 item 7: many calls over the window give one warning that names the first call,
    counts the others and names the largest excess; checked against the calls' own prompt tokens
    (R-RPL-4: the same sum as `wire_tokens`)."""
    import json
    import re

    from .helpers import bench_history

    fixture = tmp_path / "h.json"
    fixture.write_text(json.dumps(bench_history(150)), encoding="utf-8")
    r = ctxkit("replay", str(fixture), "--max-input-tokens", "4000", "--format", "json")
    calls = json.loads(r.out)["calls"]
    over = [(c["index"], c["label"], c["prompt_tokens"] - 4000) for c in calls if c["prompt_tokens"] > 4000]
    assert len(over) > 5
    lines = r.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"warning: call {over[0][0]} ({over[0][1]}): the request as sent")
    worst = max(over, key=lambda o: o[2])  # the first of the largest
    m = re.search(
        r"; ([\d,]+) more calls too, the most ([\d,]+) tokens over the window at call (\d+) \((.+)\)$", lines[0]
    )
    assert m is not None
    assert (int(m[1].replace(",", "")), int(m[2].replace(",", "")), int(m[3]), m[4]) == (
        len(over) - 1,
        worst[2],
        worst[0],
        worst[1],
    )


def test_replay_warnings_about_the_fixture_are_said_once_and_about_calls_counted() -> None:
    w = Warned(["times go backwards (R-RPL-3)"])
    for i in range(3):
        w.add(i, f"m{i}", _assembly("no `now`: the date comes from the real clock (R-SYS-2)"))  # the same every call
        w.add(i, f"m{i}", _assembly(f"{i + 1} forgotten file(s) were left out (R-FILE-3)"))  # about each call
    w.add(5, "m5", RunWarning(WarningKind.OVER_WINDOW, "a request 10 over the window (R-ASM-9)"), over=10)
    w.note("no price is known for house-model-7")
    assert w.texts() == (
        "times go backwards (R-RPL-3)",
        "no `now`: the date comes from the real clock (R-SYS-2)",
        "call 0 (m0): 1 forgotten file(s) were left out (R-FILE-3); and 2 more calls like it",
        "call 5 (m5): a request 10 over the window (R-ASM-9)",
        "no price is known for house-model-7",
    )


def test_replay_warnings_are_grouped_by_their_kind_not_their_wording() -> None:
    """Issue 22 item 3: a warning was classified by `"(R-ASM-9)" in text`, then grouped by its text;
    now by its kind (`RunWarning.kind`). R-ASM-9's is one group however it is worded; a text that
    cites R-ASM-9 is not it; the same text under two kinds is two warnings."""
    w = Warned([])
    for i in range(2):
        w.add(i, f"m{i}", _assembly("a note that cites (R-ASM-9) but is the same on every call"))
    w.add(3, "m3", RunWarning(WarningKind.OVER_WINDOW, "a request 10 over the window"), over=10)
    w.add(4, "m4", RunWarning(WarningKind.OVER_WINDOW, "the request does not fit: 12 tokens too many"), over=12)
    w.add(5, "m5", RunWarning(WarningKind.TRANSLATION, "a note that cites (R-ASM-9) but is the same on every call"))
    assert w.texts() == (
        "a note that cites (R-ASM-9) but is the same on every call",
        "call 3 (m3): a request 10 over the window; 1 more call too, the most 12 tokens over the window at call 4 (m4)",
        "a note that cites (R-ASM-9) but is the same on every call",
    )


def _assembly(text: str) -> RunWarning:
    return RunWarning(WarningKind.ASSEMBLY, text)


def test_r_rpl_7_cost_of_every_call_equals_a_fresh_pricer_across_a_price_change(tmp_path: Path) -> None:
    """The pricer keeps the rates found for the last clock object (R-RPL-9): every call's cost
    and cost without the cache still equal, as text, what a new pricer gives for that call, on
    a conversation whose clocks straddle the date the model's price changes (o3: 2025-06-10)."""
    from ctxkit.replay.cost import Pricer

    days = ["2025-06-08", "2025-06-09", "2025-06-09", "2025-06-10", "2025-06-10", "2025-06-11"]
    lines = [
        "ctxkit: 1",
        'now: "2025-06-12T09:00:00Z"',
        "model: {provider: openai, name: o3, max_input_tokens: 200000}",
        "tokenizer: approx",
        "settings: {cache: {min_tokens: 32, increment: 1}}",
        'prompts: {system: "You answer questions about invoices in one long and careful paragraph.", '
        "datetime_aware: false}",
        "messages:",
    ]
    parent = "null"
    for n, day in enumerate(days):
        text = f"Question {n} about invoice {n * 7}: " + "which line of it holds the tax and why " * 6
        lines.append(f'  - {{id: u{n}, role: user, parent: {parent}, text: "{text}", at: "{day}T10:00:00Z"}}')
        if n < len(days) - 1:
            answer = f"Answer {n}: the tax is on line {n + 3}. " + "It is added after the discount. " * 5
            lines.append(f'  - {{id: a{n}, role: assistant, parent: u{n}, text: "{answer}", at: "{day}T10:00:30Z"}}')
            parent = f"a{n}"
    path = tmp_path / "priced.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    fixture = load_fixture(str(path))
    replayed = replay(fixture)
    prices = set()
    for c in replayed.calls:
        cost = Pricer("openai", "o3", None).cost(
            c.prompt_tokens, c.cached_tokens, c.cache_write_tokens, c.output_tokens, c.clock
        )
        without = Pricer("openai", "o3", None).cost(c.prompt_tokens, 0, 0, c.output_tokens, c.clock)
        assert (str(c.cost), str(c.cost_without_cache)) == (str(cost), str(without))
        prices.add(str(Pricer("openai", "o3", None).cost(1_000_000, 0, 0, 0, c.clock)))
    assert len(prices) == 2  # the price changed between calls
