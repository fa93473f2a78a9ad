"""Replay snapshots (R-LOG-5): the pinned cache summary of a fixture's replay (docs/rules.md#golden-snapshots).

Input: a loaded fixture and options. Output: the text of `x.replay.json`,
`{"ctxkit_snapshot": 1, "replay": <summary>}` (per call label, prompt and cached tokens,
cause and limit; totals without costs) or `{"ctxkit_snapshot": 1, "error"}` when the
replay fails by rule, so that a change's effect on the cache shows in review as a
snapshot diff naming the call. A replay whose prompts depend on the real clock is
refused, as payload snapshots are.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ctxkit.errors import InputError, Problem, RuleError
from ctxkit.loading.config import Options
from ctxkit.loading.domain import Fixture
from ctxkit.snapshots.store import CLOCK_PROBLEM, MARKER, MARKER_VERSION, error_document, render

if TYPE_CHECKING:
    from ctxkit.pipeline import Result
    from ctxkit.replay.calls import ReplayCall


def replay_text(fixture: Fixture, options: Options) -> tuple[str, list[str]]:
    """The replay snapshot text for one fixture and option set, and the replay's warnings."""
    from ctxkit.replay.driver import replay
    from ctxkit.reports import replay as replay_report

    clocked: list[int] = []

    def on_call(index: int, call: ReplayCall, result: Result) -> None:
        if result.assembly.clock_dependent and result.assembly.eff.now is None:
            clocked.append(index)

    try:
        done = replay(fixture, options, on_call=on_call)
    except RuleError as exc:
        # `call 1 (q2): <source>: ...`: the fixture's path is the snapshot's name, not its content
        return render(error_document(str(exc).replace(f"{fixture.source}: ", "", 1))), []
    if clocked:
        raise InputError(Problem(fixture.source, "/now", CLOCK_PROBLEM))
    summary = replay_report.summary(replay_report.report(done))
    return render({MARKER: MARKER_VERSION, "replay": summary}), list(done.warnings)
