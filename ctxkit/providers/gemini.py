"""Gemini generateContent: parts counted alone (no framing, no priming); `models/` names."""

from ctxkit.providers.spec import Framing, ProviderSpec, Route

SPEC = ProviderSpec(
    name="gemini",
    format="gemini",
    endpoints=("generateContent",),
    routes=(Route("generateContent", r"/models/(?P<model>[^/:]+):(?:generateContent|streamGenerateContent)"),),
    prices_id="google",
    model_prefixes=("models/",),
    name_shape=r"(?:models/)?gemini-",
    framing=Framing(per_message=0, role=False, priming=0),
    image_rule="gemini",
    otel_names=("gcp.gemini", "gcp.vertex_ai", "gcp.gen_ai", "vertex_ai"),
)
