"""R-RPL-4: two items are equal exactly when their canonical JSON is. An item's key is a tuple
that holds the item's own strings (`translate/keys.py`); these tests compare key equality with
the equality of the canonical JSON it stands for, on generated values where the two could part
(1, 1.0 and true; -0.0; a string against an array or object; member order; names that are
numbers; a top-level `cache_control`)."""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxkit.translate.keys import item_key, salted_key


def _json(role: Any, part: Any) -> str:
    """The key as R-RPL-4 defines it: canonical JSON of the role and the item, no cache_control."""
    if isinstance(part, dict):
        part = {k: v for k, v in part.items() if k != "cache_control"}
    return json.dumps({"role": role, "item": part}, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


_TEXTS = st.sampled_from(["", "a", "b", "{", "[", "#", "=", "1", "true", "null", "é", '"a"', "cache_control"])
_LEAVES = st.one_of(
    _TEXTS,
    st.none(),
    st.booleans(),
    st.sampled_from([0, 1, -1, 2**70, 10**16]),
    st.sampled_from([0.0, -0.0, 1.0, 1.5, 1e16, 0.1, float("inf"), float("-inf"), float("nan")]),
)
_VALUES = st.recursive(
    _LEAVES,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.tuples(inner, inner),
        st.dictionaries(_TEXTS, inner, max_size=3),
        st.dictionaries(st.sampled_from([1, 2, 10]), inner, max_size=2),  # names JSON writes as strings
    ),
    max_leaves=8,
)
_PARTS = st.one_of(_VALUES, st.dictionaries(_TEXTS, _VALUES, max_size=4))
_ROLES = st.one_of(st.none(), st.sampled_from(["user", "assistant", "{", "="]))


@settings(max_examples=3000, deadline=None)
@given(_ROLES, _PARTS, _ROLES, _PARTS)
def test_r_rpl_4_keys_equal_exactly_when_the_canonical_json_is(role_a, a, role_b, b):
    assert (item_key(role_a, a) == item_key(role_b, b)) == (_json(role_a, a) == _json(role_b, b))
    hash(item_key(role_a, a))


@settings(max_examples=500, deadline=None)
@given(_ROLES, _PARTS)
def test_r_rpl_4_a_key_equals_its_reordered_and_copied_self(role, part):
    """The same content built anew, its members in another order, keys the same."""
    copied = copy.deepcopy(part)
    assert item_key(role, copied) == item_key(role, part)
    if isinstance(part, dict) and all(isinstance(k, str) for k in part):
        reordered = {**dict(reversed(list(copied.items()))), "cache_control": {"type": "ephemeral"}}
        assert item_key(role, reordered) == item_key(role, part)


def test_r_rpl_4_values_that_python_takes_as_equal_are_other_keys():
    """1, 1.0 and true; 0.0 and -0.0: JSON writes them apart, and so do keys."""
    keys = [item_key("user", {"n": v}) for v in (1, 1.0, True, 0.0, -0.0, "1", None, [1], {"1": 1})]
    assert len(set(keys)) == len(keys)
    assert item_key("user", {"n": {1: "a"}}) == item_key("user", {"n": {"1": "a"}})  # both {"1":"a"}


def test_r_rpl_4_keys_share_the_item_strings():
    """The key holds the very text object: a replay keeps no copy of each message's text."""
    text = "x" * 1000
    key = item_key("user", {"role": "user", "content": text})
    assert any(v is text for v in key)


def test_r_rpl_4_a_salted_key_equals_no_item_key():
    """A logged body's key salted by its settings (R-LOG-2) differs from every item's."""
    plain = item_key("user", {"a": "b"})
    assert salted_key(plain, "\x00{}") != plain
    assert salted_key(plain, "\x00{}") not in {item_key("\x00{}", "x"), item_key(None, [plain, "\x00{}"])}
    assert salted_key(plain, "\x00{}") != item_key("user", {"\x00{}": "b", "a": "b"})


@settings(max_examples=2000, deadline=None)
@given(_ROLES, st.dictionaries(_TEXTS, st.one_of(_TEXTS, st.none()), max_size=4), _ROLES, _PARTS)
def test_r_rpl_4_a_shaped_key_equals_another_only_for_equal_json(role_a, a, role_b, b):
    """A key held as its shape and values (an object of strings and nulls) against any other
    key, shaped or spelled out (names that are numbers, values that are strings only once
    frozen, arrays, a role that is itself an object): equal exactly when the JSON is."""
    assert (item_key(role_a, a) == item_key(role_b, b)) == (_json(role_a, a) == _json(role_b, b))
    for other in ({1: "x"}, {"1": "x"}, {2: None, 10: "y"}, [("",), "x"], {"": [""]}):
        assert (item_key(role_a, a) == item_key(role_b, other)) == (_json(role_a, a) == _json(role_b, other))
    assert item_key(role_a, a) != item_key(role_a, [a]) and item_key(role_a, a) != item_key(dict(a), "x")  # type: ignore[arg-type]


class _Text(str):
    """A subclass of str: its key holds the plain string (JSON writes its characters)."""


@settings(max_examples=500, deadline=None)
@given(_ROLES, st.dictionaries(_TEXTS, st.one_of(_TEXTS, st.none()), max_size=5), st.booleans())
def test_r_rpl_4_a_flat_items_key_spells_its_members_in_order(role, part, wrapped):
    """An object of strings and nulls (most items: a plain message, a text block) is keyed in C
    from its sorted members, as its shape (role and names, one shared tuple) and its values; the
    same whether a value is a str or a subclass of it (which takes the general way)."""
    names = sorted(name for name in part if name != "cache_control")
    key = item_key(role, part)
    assert key == ((("",), role, *names), *(part[name] for name in names))
    assert key[0] is item_key(role, dict(part))[0]  # the shape is shared
    assert len(key) == 1 + len(names)
    if wrapped and part:
        name = sorted(part)[0]
        other = {**part, name: _Text(part[name]) if isinstance(part[name], str) else part[name]}
        assert item_key(role, other) == item_key(role, part)
