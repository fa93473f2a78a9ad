"""OpenAI: chat completions and the Responses API; models read tiktoken's encodings."""

from ctxkit.providers.spec import ProviderSpec, Route

SPEC = ProviderSpec(
    name="openai",
    format="openai",
    endpoints=("chat.completions", "responses"),
    routes=(
        Route("chat.completions", r"(?:/deployments/(?P<model>[^/]+))?/chat/completions"),  # and compatible hosts
        Route("responses", r"/responses"),
    ),
    prices_id="openai",
    name_shape=r"(?:gpt-(?!oss)|chatgpt-|o\d(?:-|$))",
    tiktoken_names=True,
    image_rule="openai",
    keyed_settings=("prompt_cache_key",),
)
