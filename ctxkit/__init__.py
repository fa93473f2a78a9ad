"""ctxkit: see exactly what an LLM chat application sends to its model.

The pipeline, one package per stage (docs/architecture.md has the module map):

    providers/    one ProviderSpec per provider, registered once; every stage asks it
    loading/      fixture file -> domain.Fixture, Effective settings (layer 1)
    history/      branch, summary, working messages             (layer 2, R-TREE, R-CONV)
    counting/     tokenizers, image costs, the lazy per-message meter
    assembly/     system prompt, project files, order and budget (R-SYS, R-PROJ, R-ASM, R-FILE, R-REM)
    translate/    assembled list -> provider payload            (layer 3, R-TR)
    pipeline.py   fixture + options -> assembly -> payload (`run`)
    compression/  is a summary due, and its request             (R-CMP)
    reports/      budget / explain / diff renderings of the decision record
    snapshots/    golden files and the pytest plugin
    cli/          argv -> options -> pipeline -> render -> echo
"""

__version__ = "0.1.0"
