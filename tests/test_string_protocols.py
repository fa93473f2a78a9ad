"""No string protocols in ctxkit/ (issue 22 item 3): closed lists are enums, keys are built and
read in one place, warnings carry their kind.

Each check reads the source (AST) and names the file and line of every offence, so a string
protocol that comes back fails here even where no behaviour test reaches it; each check is also
run on the lines this issue removed, which it must find.
"""

from __future__ import annotations

import ast
import copy
import enum
import pickle
import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxkit.counting.reported import CACHE_KEYS, UsageShape
from ctxkit.history.working import MessageKey, Origin
from ctxkit.loading.cache_rules import Mode
from ctxkit.replay.cache import Limit
from ctxkit.replay.causes import Cause
from ctxkit.replay.verdicts import Verdict

from .conftest import GALLERY
from .helpers import assembled_or_skip

PACKAGE = Path(__file__).resolve().parent.parent / "ctxkit"
# Replay's closed lists. (A working message's Kind and Origin share their values with wire roles
# and template names, and a usage's `UsageShape` with provider and format names, so a literal of
# those values is not necessarily one of them.)
CLOSED_LISTS: tuple[type[enum.StrEnum], ...] = (Cause, Limit, Mode, Verdict)
# Names whose values are a closed list (these, Fate, Origin, Segment; `shape`: a `Reported`'s usage
# shape): comparing them with a literal is the protocol.
TYPED_NAMES = {"cause", "limit", "mode", "shape", "verdict", "fate", "origin", "segment"}
RULE_ID = re.compile(r"R-[A-Z]+-\d+")
# The key formats of the decision record, each written by its builder in history/working.py only:
# `MessageKey` (m:N:id), `image_key` (#img), `project_file_key` (project:).
KEY_FORMATS = re.compile(r"^m:|#img|project:")
KEYS_HOME = "ctxkit/history/working.py"

Modules = Iterable[tuple[str, ast.Module]]


def _package() -> list[tuple[str, ast.Module]]:
    return [
        (str(p.relative_to(PACKAGE.parent)), ast.parse(p.read_text(encoding="utf-8")))
        for p in sorted(PACKAGE.rglob("*.py"))
    ]


def _strings(node: ast.AST) -> list[str] | None:
    """The string constants of a literal (one string, or a tuple/list/set of them); None otherwise."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.Tuple | ast.List | ast.Set) and node.elts:
        found = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        return found if len(found) == len(node.elts) else None
    if isinstance(node, ast.Dict) and node.keys:
        found = [k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
        return found if len(found) == len(node.keys) else None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("frozenset", "set"):
        return _strings(node.args[0]) if len(node.args) == 1 else None
    return None


def _name(node: ast.expr) -> str | None:
    """`cause`, `x.cause` or `x["cause"]` → "cause"."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        return str(node.slice.value)
    return None


def _walk(modules: Modules) -> Iterator[tuple[str, ast.AST]]:
    for name, tree in modules:
        for node in ast.walk(tree):
            yield name, node


def _where(name: str, node: ast.AST) -> str:
    return f"{name}:{getattr(node, 'lineno', '?')}: {ast.unparse(node)}"


def _literal(node: ast.expr) -> bool:
    """A string constant, or a tuple, list or set holding one."""
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return any(_literal(e) for e in node.elts)
    return bool(_strings(node))


def compared(modules: Modules) -> list[str]:
    """`brk.cause == "append"`, `rules.mode in ("explicit", "breakpoints")`, `c["cause"] not in {...}`,
    `r.key == "image_drop_notice"` (a key: the message's origin or a row's field says what it is)."""
    found = []
    for name, node in _walk(modules):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            typed = any(_name(o) in TYPED_NAMES or isinstance(o, ast.Attribute) and o.attr == "key" for o in operands)
            if typed and any(_literal(o) for o in operands):
                found.append(_where(name, node))
    return found


def restated(modules: Modules) -> list[str]:
    """Two or more strings, all values of one closed list, in a set, tuple, list or as dict keys."""
    found = []
    for name, node in _walk(modules):
        values = _strings(node) or []
        for closed in CLOSED_LISTS:
            if len(values) >= 2 and all(v in {str(m) for m in closed} for v in values):
                found.append(f"{_where(name, node)}: {closed.__name__} restated as strings")
    return found


def taken_apart(modules: Modules) -> list[str]:
    """`.startswith`, `.split`, `.rsplit`, `.partition` or a slice on a key (`key`, `x.key`)."""
    found = []
    for name, node in _walk(modules):
        target = None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in ("startswith", "endswith", "split", "rsplit", "partition", "rpartition"):
                target = node.func.value
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
            target = node.value
        if target is not None and _name(target) == "key":
            found.append(_where(name, node))
    return found


def by_rule(modules: Modules) -> list[str]:
    """`"(R-ASM-9)" in w`, `w.endswith("(R-ASM-9)")`: a warning recognised by the rule it cites."""
    found = []
    for name, node in _walk(modules):
        probes: list[ast.expr] = []
        if isinstance(node, ast.Compare) and any(isinstance(op, ast.In | ast.NotIn) for op in node.ops):
            probes = [node.left]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in ("startswith", "endswith", "find", "index", "count", "search", "match"):
                probes = list(node.args)
        if any(RULE_ID.search(text) for probe in probes for text in _strings(probe) or []):
            found.append(_where(name, node))
    return found


def keys_written(modules: Modules) -> list[str]:
    """A key format written out (`f"m:{len(i)}:{i}"`, `f"{w.key}#img{n}"`, `f"project:{f.id}"`) or
    looked for (`key.startswith("m:")`) anywhere but beside its builder in history/working.py."""
    return [
        _where(name, node)
        for name, node in _walk(modules)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and KEY_FORMATS.search(node.value)
        if name != KEYS_HOME
    ]


# Lines this issue removed from ctxkit/, each a protocol its check must find.
REMOVED = {
    compared: [
        'if cause not in ("append", "first_call"): pass',
        'lookback = r.lookback if r.mode == "explicit" else None',
        'if theirs is None or s_theirs.origin in (Origin.REMINDER, "image_drop_notice"): pass',
        'explicit = rules.mode == "explicit"',
        'return found + [r for r in prepared if not r.key or r.key == "image_drop_notice"]',
        'if rep.shape == "openai" and "cached_tokens" not in details: pass',
    ],
    restated: [
        'HEALTHY = frozenset({"append", "first_call"})',
        'WRITING = frozenset({"explicit", "breakpoints"})',
        'VERDICTS = ("agree", "count_off", "provider_miss", "warm_elsewhere", "disagree")',
        'CAUSE_RULES = {"first_call": "R-RPL-1", "expired": "R-RPL-5"}',
    ],
    taken_apart: [
        'capped = frozenset(r.key.rsplit("#img", 1)[0] for r in rows)',
        "def _unsalted(key: str) -> str:\n    return key.split('\\x00', 1)[0]",
        'def get(self, key):\n    return key.startswith("m:")',
    ],
    by_rule: ['over = [w for w in warnings if "(R-ASM-9)" in w]'],
    keys_written: [
        'key = f"{w.key}#img{n}"',
        'return f"m:{len(message_id)}:{message_id}{part}"',
        'row = Row(f.id, "file", key=f"project:{f.id}")',
        'if found is None and key.startswith("m:"): pass',
    ],
}
CHECKS: list[Callable[[Modules], list[str]]] = list(REMOVED)


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
def test_no_string_protocol_in_ctxkit(check: Callable[[Modules], list[str]]) -> None:
    found = check(_package())
    assert not found, "\n".join(found)


@pytest.mark.parametrize(
    ("check", "line"), [(c, line) for c, lines in REMOVED.items() for line in lines], ids=lambda x: str(x)[:40]
)
def test_each_check_finds_the_protocol_it_replaced(check: Callable[[Modules], list[str]], line: str) -> None:
    assert check([("ctxkit/somewhere.py", ast.parse(line))])


def test_every_usage_shape_says_how_it_reports_the_cache() -> None:
    """`reports_cache` looks a shape's keys up by the enum: a shape added without its keys fails here."""
    assert set(CACHE_KEYS) == set(UsageShape)
    assert all(type(shape) is UsageShape for shape in CACHE_KEYS)


# --- the message key type ---------------------------------------------------------------------


@given(st.text(max_size=12), st.sampled_from(["", "#file0", "#calls1", "#result2", ":f1"]), st.text(max_size=12))
def test_a_message_key_gives_back_its_parts_and_no_id_forges_another(ident: str, part: str, other: str) -> None:
    key = MessageKey(ident, part)
    assert (key.message_id, key.part) == (ident, part)
    assert key == f"m:{len(ident)}:{ident}{part}"  # the text reports and `diff` show
    if other != ident:
        assert MessageKey(other, part) != key and MessageKey(other + part) != key
    assert key not in {str(o) for o in Origin}  # nor a generated message's key
    for copied in (copy.copy(key), copy.deepcopy(key), pickle.loads(pickle.dumps(key))):
        assert type(copied) is MessageKey and copied == key and copied.message_id == ident


@pytest.mark.parametrize("path", GALLERY, ids=lambda p: p.stem)
def test_stored_messages_and_only_they_have_message_keys(path: Path) -> None:
    """`isinstance(key, MessageKey)` is how the record tells a stored message's key (its fate may
    be looked up in the older history, `assembly.fates`) from a generated message's."""
    a = assembled_or_skip(path).assembly
    stored = {Origin.MESSAGE, Origin.FILE, Origin.TOOL_CALLS, Origin.TOOL_RESULT, Origin.ANSWER, Origin.SUMMARY}
    for w in [*a.messages, *a.dropped]:
        assert isinstance(w.key, MessageKey) == (w.origin in stored), (w.key, w.origin)
        if isinstance(w.key, MessageKey):
            assert w.key.message_id == w.source_id
