"""A provider added by the recipe (docs/architecture.md, "How to add a provider"): Parrot
(tests/fake_provider.py, one module, registered once at run time) runs through every command —
exit 0, no internal error — and every stage reads it from the registry, none from a list of
its own (issue 22 item 2)."""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from ctxkit import providers, translate
from ctxkit.errors import InputError
from ctxkit.loading.cache_rules import rules
from ctxkit.loading.domain import CacheRules
from ctxkit.loading.models import lookup
from ctxkit.loading.read import load_fixture
from ctxkit.pipeline import run
from ctxkit.translate import bodies, reading
from ctxkit.translate.items import priming_tokens, prompt_items

from . import fake_provider
from .conftest import ROOT, ctxkit

DATA = ROOT / "tests" / "data" / "parrot"
CHAT = str(DATA / "chat.yaml")
LOG = str(DATA / "calls.jsonl")


@pytest.fixture
def parrot() -> Iterator[None]:
    fake_provider.install()
    try:
        yield
    finally:
        fake_provider.uninstall()


def commands(tmp: Path) -> dict[str, list[str]]:
    """Every command of `ctxkit --help` that reads a fixture, a log or the model table, on Parrot's."""
    return {
        "validate": ["validate", CHAT],
        "assemble": ["assemble", CHAT],
        "assemble text": ["assemble", CHAT, "--format", "text"],
        "budget": ["budget", CHAT, "--format", "json"],
        "explain": ["explain", CHAT],
        "diff": ["diff", CHAT, "--max-input-tokens", "6000", "--max-input-tokens", "300"],
        "diff providers": ["diff", CHAT, "--provider", "parrot", "--provider", "ollama"],
        "compress": ["compress", CHAT, "--max-input-tokens", "400"],
        "replay": ["replay", CHAT],
        "replay json": ["replay", CHAT, "--format", "json", "--payloads", str(tmp / "bodies")],
        "replay as parrot": ["replay", str(ROOT / "fixtures" / "replay" / "summary.yaml"), "--provider", "parrot"],
        "replay log": ["replay", LOG],
        "report": ["report", CHAT, "--replay", "-o", str(tmp / "chat.html")],
        "report log": ["report", LOG, "--replay", "-o", str(tmp / "log.html")],
        "snapshot": ["snapshot", CHAT, "--snapshots", str(tmp / "snaps"), "--update", "--replay"],
        "snapshot as parrot": ["snapshot", CHAT, "--snapshots", str(tmp / "snaps"), "--provider", "parrot"],
        "models": ["models", "--format", "json"],
        "schema": ["schema"],
        "import": ["import", str(DATA / "request.json"), "--max-input-tokens", "6000"],
    }


@pytest.mark.parametrize("name", list(commands(Path("."))))
def test_a_provider_added_by_the_recipe_runs_every_command(parrot: None, tmp_path: Path, name: str) -> None:
    args = commands(tmp_path)[name]
    if name == "snapshot as parrot":  # the compared run: the snapshots the first run wrote
        ctxkit(*commands(tmp_path)["snapshot"][:-2], "--update", "--provider", "parrot")
    done = ctxkit(*args)
    assert "internal error" not in done.err.lower() and "Traceback" not in done.err, str(done)


def test_every_stage_reads_parrot_from_its_spec(parrot: None) -> None:
    """The model-table rows, cache rules, framing and translator a Parrot fixture gets are its spec's."""
    result = run(load_fixture(CHAT))
    assert result.assembly.eff.max_input_tokens == 6000 and result.assembly.eff.tokenizer == "approx"
    assert lookup("parrot", "parrot/parrot-1") == lookup("parrot", "parrot-1")
    assert rules("parrot", "parrot-1", CacheRules()).min_tokens == 64
    body = result.payload.body
    assert body["tools"][0]["about"] == "Current weather for a city"  # Parrot's own wire format
    assert body["turns"][-1] == {"role": "user", "content": "Should I take an umbrella tomorrow?"}
    meter = result.assembly.meter
    # approx: 35 characters // 4 = 8 tokens, + 2 framing, the role not counted (Framing(2, role=False));
    # OpenAI's rules would give 8 + 3 + 1 ("user") = 12
    assert prompt_items(result.payload, meter=meter)[-1].tokens == 10
    assert priming_tokens(result.payload, meter=meter) == 1


def test_a_wire_format_is_registered_whole_or_not_at_all() -> None:
    """A wire format's behaviour is three entries keyed by its name: the translator (`MODULES`, or
    `register_format`), the reader (`reading.READERS`) and the logged body's normaliser
    (`bodies.NORMALISERS`). Every built-in format has all three, every provider's format is one,
    and `register_format` / `unregister_format` add and remove Parrot's three together."""
    assert set(translate.MODULES) == set(reading.READERS) == set(bodies.NORMALISERS)
    assert {providers.wire_format(n) for n in providers.names()} <= set(translate.MODULES)
    fake_provider.install()
    try:
        assert reading.READERS["parrot"] is fake_provider.read
        assert bodies.NORMALISERS["parrot"] is fake_provider.normalise
        assert translate.translator("parrot") is fake_provider.translate_body
    finally:
        fake_provider.uninstall()
    assert "parrot" not in reading.READERS and "parrot" not in bodies.NORMALISERS


def test_parrot_is_a_choice_while_registered_only(parrot: None) -> None:
    assert "parrot" in json.loads(ctxkit("schema").out)["$defs"]["model"]["properties"]["provider"]["enum"]
    fake_provider.uninstall()
    gone = ctxkit("validate", CHAT, expect=2)
    assert "'parrot' is not one of" in gone.err
    assert ctxkit("assemble", str(ROOT / "fixtures" / "plain_chat.yaml"), "--provider", "parrot", expect=2)
    with pytest.raises(InputError, match="unknown provider 'parrot'"):
        providers.spec("parrot")


def test_a_parrot_log_is_read_by_its_own_reader_and_framing(parrot: None) -> None:
    """Logged Parrot bodies (`turns`, not `messages`) are read by the reader and normaliser its
    format registered, counted with its framing: approx tokens (characters // 4) + 2 per turn,
    + 1 priming. Call 0: system 172 chars (43 + 2), user 17 (4 + 2), + 1 = 52. Call 1 adds the
    answer (24 chars: 6 + 2) and a question (12: 3 + 2): 65; its prefix is call 0's turns, 51."""
    calls = json.loads(ctxkit("replay", LOG, "--format", "json").out)["calls"]
    assert [c["prompt_tokens"] for c in calls] == [52, 65]
    assert calls[1]["prefix_tokens"] == 51
    assert calls[1]["break"]["this"] == {"kind": "assistant", "id": "/turns/2", "segment": None}
    assert calls[1]["limit"] == "minimum"  # 51 < the 64 tokens Parrot's cache rules ask for


def test_a_cassette_reaches_parrot_by_the_route_in_its_spec(parrot: None, tmp_path: Path) -> None:
    """A cassette holds URLs, not provider names: the spec's `routes` send a recorded request to
    its provider and endpoint (the model from the URL where the body names none); any other URL
    of the host is skipped and counted by its last path segment."""
    first = json.loads(Path(LOG).read_text("utf-8").splitlines()[0])["request"]
    body = {k: v for k, v in first.items() if k != "model"}
    interactions = [
        {"request": {"method": "POST", "uri": "https://parrot.example/v1/parrot-1/turns", "body": json.dumps(body)}},
        {"request": {"method": "POST", "uri": "https://parrot.example/v1/parrot-1/embed", "body": "{}"}},
    ]
    cassette = tmp_path / "parrot.json"
    cassette.write_text(json.dumps({"interactions": interactions, "version": 1}), "utf-8")
    doc = json.loads(ctxkit("replay", str(cassette), "--format", "json").out)
    assert [(c["provider"], c["endpoint"], c["model"], c["prompt_tokens"]) for c in doc["calls"]] == [
        ("parrot", "parrot.chat", "parrot-1", 52)  # call 0 of the Parrot log, as its own reader counts it
    ]
    assert doc["skipped"] == {"embed": 1}
    assert providers.route("parrot.example", "/v1/parrot-1/turns") == ("parrot", "parrot.chat", "parrot-1")


def test_a_logged_record_with_parrots_endpoint_alone_is_parrots(parrot: None, tmp_path: Path) -> None:
    """A record that names its endpoint but no provider belongs to the one provider whose spec
    lists that endpoint (Parrot's `parrot.chat`), not to a provider guessed from the body."""
    records = [json.loads(line) for line in Path(LOG).read_text("utf-8").splitlines()]
    log = tmp_path / "anonymous.jsonl"
    log.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "provider"}) + "\n" for r in records))
    calls = json.loads(ctxkit("replay", str(log), "--format", "json").out)["calls"]
    assert [(c["provider"], c["prompt_tokens"]) for c in calls] == [("parrot", 52), ("parrot", 65)]


def test_cassette_routing_names_no_provider_of_its_own() -> None:
    """Which URL is which provider's call lives in the specs (`ProviderSpec.routes`) only: the
    cassette reader holds no provider name, endpoint or URL path of one."""
    source = (ROOT / "ctxkit" / "loading" / "cassettes.py").read_text("utf-8")
    texts = {n.value for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    known = {*providers.names()} | {e for n in providers.names() for e in providers.spec(n).endpoints}
    assert texts & known == set()
    assert not [t for t in texts if re.search(r"completions|/messages|/api/|deployments|generateContent", t)]


def test_a_provider_registered_without_cache_rules_or_translator_is_one_error_line(tmp_path: Path) -> None:
    """What the old recipe left out ended in an internal error; now one `error:` line, exit 2."""
    providers.register(providers.ProviderSpec(name="mute", format="mute", endpoints=("mute.chat",)))
    try:
        fixture = tmp_path / "mute.yaml"
        fixture.write_text(Path(CHAT).read_text("utf-8").replace("provider: parrot", "provider: mute"), "utf-8")
        failed = ctxkit("assemble", str(fixture), "--max-input-tokens", "6000", expect=2)
        assert (
            failed.err == "error: provider 'mute' speaks 'mute', a wire format with no translator (register_format)\n"
        )
        failed = ctxkit("replay", str(fixture), "--max-input-tokens", "6000", expect=2)
        assert "provider 'mute' has no prompt-cache rules" in failed.err and failed.err.count("\n") == 1
    finally:
        providers.unregister("mute")
