"""The pure core driver: a loaded fixture and options → assembly, payload, reports.

Input: `domain.Fixture`, `config.Options`. Output: `Result`. No printing, no
exits, no click: callable from tests, the pytest plugin and other programs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ctxkit.assembly import collector
from ctxkit.assembly.assemble import Assembly, Shared, assemble
from ctxkit.history.working import Row
from ctxkit.loading import models
from ctxkit.loading.config import Options, resolve
from ctxkit.loading.domain import Fixture
from ctxkit.translate import Payload, translate


@dataclass(frozen=True, slots=True)
class Result:
    assembly: Assembly
    payload: Payload

    @property
    def warnings(self) -> list[str]:
        eff = self.assembly.eff
        mismatch = models.provider_mismatch(str(eff.provider), eff.model)
        return [*([mismatch] if mismatch else []), *self.assembly.record.warnings, *self.payload.prepared.warnings]

    def budget(self) -> dict[str, Any]:
        from ctxkit.reports import budget as budget_report

        with collector.paused():
            return budget_report.report(self.assembly, self.payload)

    def explain(self) -> list[Row]:
        from ctxkit.reports import explain as explain_report

        with collector.paused():
            return explain_report.rows(self.assembly, self.payload)


def run(fixture: Fixture, options: Options | None = None, *, shared: Shared | None = None) -> Result:
    """`shared`: work reused across the calls of one replay (see `assemble.Shared`)."""
    with collector.paused():  # linear allocation, no cycles: see `collector`
        eff = resolve(fixture, options)
        assembly = assemble(eff, shared=shared)
        return Result(assembly, translate(assembly))
