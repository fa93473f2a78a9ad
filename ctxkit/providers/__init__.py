"""The providers ctxkit knows: one module each (a `ProviderSpec`), registered here once.

A provider added at run time calls `register` with its own spec (docs/architecture.md, "How to
add a provider"); every stage asks `spec(name)` and `names()`, never a list of its own.
"""

from ctxkit.providers import anthropic, azure, gemini, ollama, openai
from ctxkit.providers.spec import Framing, ProviderSpec, Route, names, register, route, spec, unregister, wire_format

for _module in (openai, azure, anthropic, ollama, gemini):  # the schema's and the command line's order
    register(_module.SPEC)

__all__ = ["Framing", "ProviderSpec", "Route", "names", "register", "route", "spec", "unregister", "wire_format"]
