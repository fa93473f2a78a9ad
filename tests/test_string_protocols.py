"""No string protocols in ctxkit/ (issue 22 item 3): closed lists are enums, keys are built and
read in one place, warnings carry their kind.

Each check reads the source (AST) and names the file and line of every offence, so a string
protocol that comes back fails here even where no behaviour test reaches it; each check is also
run on the lines this issue removed, which it must find.
"""

from __future__ import annotations

import ast
import enum
import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import pytest

from ctxkit.loading.cache_rules import Mode
from ctxkit.replay.cache import Limit
from ctxkit.replay.causes import Cause
from ctxkit.replay.verdicts import Verdict

PACKAGE = Path(__file__).resolve().parent.parent / "ctxkit"
# Replay's closed lists. (A working message's Kind and Origin share their values with wire roles
# and template names, so a literal of those values is not necessarily one of them.)
CLOSED_LISTS: tuple[type[enum.StrEnum], ...] = (Cause, Limit, Mode, Verdict)
# Names whose values are a closed list (these, Fate, Origin, Segment): comparing them with a
# literal is the protocol.
TYPED_NAMES = {"cause", "limit", "mode", "verdict", "fate", "origin", "segment"}
RULE_ID = re.compile(r"R-[A-Z]+-\d+")
# (module, function) that may take a key apart: the parser beside its builder.
PARSERS = {
    ("ctxkit/history/working.py", "parse_message_key"),
    ("ctxkit/assembly/fates.py", "get"),  # until message keys are typed (issue 22 item 3, second step)
}

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
    """`brk.cause == "append"`, `rules.mode in ("explicit", "breakpoints")`, `c["cause"] not in {...}`."""
    found = []
    for name, node in _walk(modules):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(_name(o) in TYPED_NAMES for o in operands) and any(_literal(o) for o in operands):
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
    for name, tree in modules:
        for node in _outside_parsers(name, tree):
            target = None
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                if node.func.attr in ("startswith", "endswith", "split", "rsplit", "partition", "rpartition"):
                    target = node.func.value
            elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
                target = node.value
            if target is not None and _name(target) == "key":
                found.append(_where(name, node))
    return found


def _outside_parsers(name: str, tree: ast.AST) -> Iterator[ast.AST]:
    """Every node of the module but those inside a function of `PARSERS`."""
    for child in ast.iter_child_nodes(tree):
        if isinstance(child, ast.FunctionDef) and (name, child.name) in PARSERS:
            continue
        yield child
        yield from _outside_parsers(name, child)


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


def image_keys_built(modules: Modules) -> list[str]:
    """An image row's key written out (`f"{w.key}#img{n}"`) anywhere but `working.image_key`."""
    return [
        _where(name, node)
        for name, node in _walk(modules)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and "#img" in node.value
        if name != "ctxkit/history/working.py"
    ]


# Lines this issue removed from ctxkit/, each a protocol its check must find.
REMOVED = {
    compared: [
        'if cause not in ("append", "first_call"): pass',
        'lookback = r.lookback if r.mode == "explicit" else None',
        'if theirs is None or s_theirs.origin in (Origin.REMINDER, "image_drop_notice"): pass',
        'explicit = rules.mode == "explicit"',
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
    image_keys_built: ['key = f"{w.key}#img{n}"'],
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
