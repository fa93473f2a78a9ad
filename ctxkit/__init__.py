"""ctxkit: see exactly what an LLM chat application sends to its model.

The pipeline, one module per stage:

    load       fixture file  -> domain.Fixture           (layer 1: the stored tree)
    config     Fixture + command-line options -> Effective settings
    tree       branch, leaf and applicable summary       (R-TREE)
    convert    branch -> working messages                (layer 2, R-CONV)
    system     system prompt, reserved tokens, reminder  (R-SYS, R-REM)
    assemble   order, budget, project and forgotten files (R-ASM, R-PROJ, R-FILE)
    translate  assembled list -> provider payload        (layer 3, R-TR)
    reports    budget / explain / diff renderings of the decision record
"""

__version__ = "0.1.0"
