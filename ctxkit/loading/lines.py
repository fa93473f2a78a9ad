"""Where a schema error is in the file: a JSON pointer → line and column of its YAML or JSON text.

Input: an `InputError` from the schema stage and the document's text. Output: the same
problems, each pointer that can be found followed by `(line L, column C)`. Only the error
path pays for this: the text is composed again (YAML's node tree keeps positions; JSON
is YAML here), and texts over LOCATE_LIMIT are left as they are.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ctxkit.errors import InputError, Problem

if TYPE_CHECKING:
    import yaml

LOCATE_LIMIT = 4 * 1024 * 1024  # characters: composing costs about a second per few MB


def with_lines(error: InputError, text: str) -> InputError:
    """`error` with a line and column added to every problem located by a pointer."""
    if len(text) > LOCATE_LIMIT or not any(p.location.startswith("/") for p in error.problems):
        return error
    import yaml

    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except (yaml.YAMLError, RecursionError):  # the schema stage refuses deep nesting itself
        return error
    if root is None:
        return error
    return InputError([_located(p, root) for p in error.problems])


def _located(problem: Problem, root: yaml.Node) -> Problem:
    if not problem.location.startswith("/"):
        return problem
    node = _find(root, problem.location)
    if node is None:
        return problem
    mark = node.start_mark
    return Problem(
        problem.source, problem.location, f"{problem.message} (line {mark.line + 1}, column {mark.column + 1})"
    )


def _find(node: yaml.Node, location: str) -> yaml.Node | None:
    """The node at a JSON pointer; for a key that is the last part, the key's own node."""
    import yaml

    parts = [p.replace("~1", "/").replace("~0", "~") for p in location.split("/")[1:]]
    for n, part in enumerate(parts):
        if isinstance(node, yaml.MappingNode):
            match = next(((k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == part), None)
            if match is None:
                return None
            node = match[0] if n == len(parts) - 1 else match[1]
        elif isinstance(node, yaml.SequenceNode) and part.isdigit() and int(part) < len(node.value):
            node = node.value[int(part)]
        else:
            return None
    return node
