"""Anthropic Messages: its turns' framing, the fitted text ratio, Bedrock's model ids priced too."""

from ctxkit.providers.spec import ProviderSpec, Route

SPEC = ProviderSpec(
    name="anthropic",
    format="anthropic",
    endpoints=("messages",),
    routes=(
        Route("messages", r"/v1/messages"),
        Route("messages", r"/model/(?P<model>[^/]*anthropic[^/]*)/invoke(?:-with-response-stream)?"),  # Bedrock
    ),
    prices_id="anthropic",
    also_priced_by=("aws",),  # Bedrock serves the models under its own ids
    name_shape=r"claude-",
    text_ratio="anthropic_ratio.json",
    image_rule="anthropic",
    keyed_settings=("tool_choice", "thinking"),  # change the cached messages, not the system blocks
    keyed_from="messages",
    otel_names=("aws.bedrock",),
)
