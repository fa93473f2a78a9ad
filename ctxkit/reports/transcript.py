"""`assemble --format text`: a readable transcript of the payload's messages.

Input: a `pipeline.Result`. Output: text — each message's role, tokens and fate,
then its text (images shortened unless raw).
"""

from __future__ import annotations

from ctxkit.history.working import Kind
from ctxkit.output import plural, short_image
from ctxkit.pipeline import Result


def render(result: Result, *, raw: bool = False) -> str:
    a, prepared = result.assembly, result.payload.prepared
    fates = a.fates
    out = [
        f"# {a.eff.fixture.name or a.eff.fixture.source} — {result.payload.provider} "
        f"{a.eff.model}, {plural(len(prepared.messages), 'message')}"
    ]
    for n, m in enumerate(prepared.messages):
        source = prepared.source(n)
        working = a.messages[source] if source is not None else None  # linear: no search
        tokens = a.meter.of(working) if working else a.meter.text(m.text)
        fated = fates.get(m.key)
        fate = f"{fated.fate} {fated.rule}" if fated else "generated"
        label = m.role if working is None or working.kind is not Kind.REMINDER else "user (reminder)"
        cache = " cache" if m.cacheable else ""
        out.append(f"\n--- [{n}] {label} · {plural(tokens, 'token')} · {fate}{cache} ---")
        for c in m.tool_calls:
            out.append(f"call {c.id} {c.name}({_args(c.args)})")
        if m.tool_call_id:
            out.append(f"result for {m.tool_call_id}:")
        for p in m.parts:
            if p.image is None:
                if p.text:
                    out.append(p.text)
            else:
                shown = p.b64 if raw else short_image(p.b64)
                out.append(f"<image {p.mime} {shown}>")
    return "\n".join(out) + "\n"


def _args(args: object) -> str:
    import json

    return json.dumps(args, ensure_ascii=False)
