"""Ollama /api/chat: a local server, unpriced; model names carry tags (`llama3.1:8b`)."""

from ctxkit.providers.spec import ProviderSpec, Route

SPEC = ProviderSpec(
    name="ollama",
    format="ollama",
    endpoints=("api.chat",),
    routes=(Route("api.chat", r"/api/chat"),),
    free=True,
    model_tags=True,
)
