"""Azure OpenAI: OpenAI's format, models and cache rules under Azure's prices and image cap."""

from ctxkit.providers.spec import ProviderSpec, Route

SPEC = ProviderSpec(
    name="azure",
    format="openai",
    endpoints=("chat.completions", "responses"),
    routes=(  # the deployment names the model; a Responses URL is read as OpenAI's
        Route("chat.completions", r"(?:/deployments/(?P<model>[^/]+))?/chat/completions", host=r"azure"),
        Route("chat.completions", r"/openai/deployments/(?P<model>[^/]+)/chat/completions"),
    ),
    models="openai",  # (its cache_rules.json entry says `same_as` openai, with Azure's own source)
    prices_id="azure",
    tiktoken_names=True,
    image_rule="openai",
    keyed_settings=("prompt_cache_key",),
    image_cap=50,  # images per request (R-TR-6)
    otel_names=("azure.ai.openai", "az.ai.openai", "azure.ai.inference"),
)
