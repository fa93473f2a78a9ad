"""Built-in texts by name (docs/rules.md#templates), their slots, and override resolution.

Input: override maps (fixture `templates:`, a `--templates` file). Output: a
`Templates` value that fills slots by plain replacement of the listed names.
The prose is ctxkit's own wording; the short format strings are the spec's.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ctxkit.loading.domain import Prompts

_SYSTEM_PROMPT = """\
You are the assistant of a team's chat workspace. Give accurate, well-organised \
answers that rest on the conversation, the documents you are given and the results \
of the tools you call. When something is uncertain or missing, say so plainly \
rather than guessing.

Today is {{CURRENT_DATETIME}}.

{{REMINDER_TAG_DESCRIPTION}}

{{CITATION_GUIDANCE}}"""

# Filled in the base system prompt (see assembly/system.py); no other template has them.
SYSTEM_PLACEHOLDERS = ("CURRENT_DATETIME", "REMINDER_TAG_DESCRIPTION", "CITATION_GUIDANCE")

# name -> (default text, slots)
BUILTIN: dict[str, tuple[str, tuple[str, ...]]] = {
    "system_prompt": (_SYSTEM_PROMPT, ()),
    "citation_guidance": (
        "Cite the documents and search results you rely on with their numbers in "
        "square brackets, such as [1] or [2][3], right after the statement they "
        "support. Cite only sources you were actually given.",
        (),
    ),
    "reminder_tag_description": (
        "Some user messages end with text inside <system-reminder> tags. That text "
        "comes from the application, not from the user: follow it, but do not "
        "mention it or quote it.",
        (),
    ),
    "datetime_line": ("Today is {datetime}.", ("datetime",)),
    "tool_guidance.search": (
        "## Searching\n\nWhen the answer depends on facts you do not have, search "
        "before answering, and keep calling tools until you have what you need. "
        "Prefer several focused queries over one broad one.",
        (),
    ),
    "tool_guidance.internal_search": (
        "## internal_search\n\nSearches the team's own documents: wikis, tickets, "
        "chats and uploaded files. Use it first for anything about the organisation.",
        (),
    ),
    "tool_guidance.web_search": (
        "## web_search\n\nSearches the public web. Use it for current events and "
        "public facts the team's documents do not cover.",
        (),
    ),
    "tool_guidance.open_url": (
        "## open_url\n\nReads the full text of web pages. Search results are only "
        "snippets: open the most promising pages before relying on them.",
        (),
    ),
    "tool_guidance.python": (
        "## python\n\nRuns Python code in a sandbox. Use it for calculations, data "
        "analysis and charts instead of working numbers out by hand.",
        (),
    ),
    "tool_guidance.generate_image": (
        "## generate_image\n\nCreates images from a text description. Describe the "
        "picture precisely; refer to earlier images by their file id.",
        (),
    ),
    "tool_guidance.memory": (
        "## memory\n\nStores short facts about the user for later conversations. "
        "Save only what the user would want remembered.",
        (),
    ),
    "reminder.citation": (
        "Remember to cite your sources with their numbers in square brackets.",
        (),
    ),
    "reminder.last_cycle": (
        "This is your last chance to call tools in this turn: answer with what you have now.",
        (),
    ),
    "reminder.open_url": (
        "You have just searched the web. Open the most relevant results with "
        "open_url before answering; snippets alone are not enough.",
        (),
    ),
    "reminder.image_generation": (
        "The image was generated and the user can already see it. Do not repeat its "
        "file id or describe it at length; answer briefly.",
        (),
    ),
    "reminder.generated_files": (
        "Files were generated in this turn. Mention them by name so the user can find them.",
        (),
    ),
    "file.text": ("File: {name}\n{content}\nEnd of File", ("name", "content")),
    "file.unavailable": (
        "File: {name}\n[The content of this file could not be read.]\nEnd of File",
        ("name",),
    ),
    "file.metadata_only": (
        "File: {name} (file_id: {id})\n[Only the file's metadata is available; read "
        "it with the read_file tool if you need its content.]\nEnd of File",
        ("name", "id"),
    ),
    "documents_preamble": (
        "Here are some documents provided for context, they may not all be relevant:",
        (),
    ),
    "forgotten_files.header": (
        "You have access to the following files. Use the read_file tool to read "
        "sections of any file. You MUST pass the file_id UUID (not the filename) to "
        "read_file:",
        (),
    ),
    "forgotten_files.line": (
        '- file_id="{id}" filename="{name}" (~{chars} chars)',
        ("id", "name", "chars"),
    ),
    "tool_result_placeholder": (
        "This tool call completed but the results are no longer accessible.",
        (),
    ),
    "image.label": ("[attached image \u2014 file_id: {id}]", ("id",)),
    "image.non_vision_marker": (
        "[attached image \u2014 file_id: {id} \u2014 not shown: the current model does not support image input]",
        ("id",),
    ),
    "image.drop_notice": (
        "{count} earlier image(s) attached to this conversation were omitted to fit "
        "the model's per-request image limit.",
        ("count",),
    ),
    "summary.system": (
        "You write summaries of conversations between a user and an assistant. The "
        "summary replaces the messages it covers, so keep every fact, decision, open "
        "question, file and number that later turns may need. Write plain prose, "
        "without greetings.",
        (),
    ),
    "summary.progressive_block": (
        "A summary of the conversation before these messages already exists. Fold it "
        "into the new summary:\n\n{previous_summary}",
        ("previous_summary",),
    ),
    "summary.cutoff_marker": (
        "[End of the messages to summarize. The messages below are recent context only; do not summarize them.]",
        (),
    ),
    "summary.instruction": (
        "Summarize the conversation above the end marker.",
        (),
    ),
    "summary.progressive_instruction": (
        "Write one updated summary that combines the existing summary with the messages above the end marker.",
        (),
    ),
    "summary.used_tools": ("[Used tools: {tools}]", ("tools",)),
}


def check_override(name: str, text: object) -> str | None:
    """Return what is wrong with overriding `name` by `text`, or None.

    Wrong: an unknown name, a text that is not a string, a slot left out. A brace that
    is not a slot is not wrong: it is sent as written, with a warning (`brace_warning`)."""
    if name not in BUILTIN:
        return f"unknown template name {name!r} (see `ctxkit templates`)"
    if not isinstance(text, str):
        return f"template {name!r} must be a string"
    slots = BUILTIN[name][1]
    missing = [s for s in slots if "{" + s + "}" not in text]
    if missing:
        unknown = unknown_braces(name, text)
        hint = f" (it has {', '.join(unknown)}: a typo?)" if unknown else ""
        return f"template {name!r} is missing its slot(s) " + ", ".join("{" + s + "}" for s in missing) + hint
    return None


# A name in braces: `{{WORD}}` (a system prompt placeholder) or `{word}` (a slot).
_BRACED_WORD = re.compile(r"\{\{(\w+)\}\}|\{(\w+)\}")


def unknown_braces(name: str, text: str) -> list[str]:
    """The `{word}`s that are not the template's slots and the `{{WORD}}`s that are not its
    placeholders (only `system_prompt` has them), as written, once each, in order."""
    slots = BUILTIN[name][1]
    placeholders = SYSTEM_PLACEHOLDERS if name == "system_prompt" else ()
    found: dict[str, None] = {}
    for match in _BRACED_WORD.finditer(text):
        placeholder, slot = match.groups()
        if placeholder in placeholders or placeholder in slots or slot in slots:  # `{{slot}}`: filled inside
            continue
        found[match[0]] = None
    return list(found)


def brace_warning(name: str, text: str) -> str | None:
    """Docs/rules.md#templates: one warning per template for the names in braces it does not
    fill (a likely typo); the text is still sent exactly as written."""
    unknown = unknown_braces(name, text)
    if not unknown:
        return None
    return (
        f"template {name!r} has {', '.join(unknown)}, which it does not fill "
        f"({_allowed(name, BUILTIN[name][1])}): sent as written"
    )


def placeholder_warning(field: str, text: str | None) -> str | None:
    """An own prompt (`prompts.system`, `prompts.custom_agent`) with a `{{WORD}}` that is not
    one of the three placeholders: sent as written, with a warning (a likely typo)."""
    if not text or "{{" not in text:
        return None
    unknown = dict.fromkeys(m[0] for m in _BRACED_WORD.finditer(text) if m[1] and m[1] not in SYSTEM_PLACEHOLDERS)
    if not unknown:
        return None
    known = ", ".join("{{" + p + "}}" for p in SYSTEM_PLACEHOLDERS)
    return f"{field} has {', '.join(unknown)}, which is not a placeholder ({known}): sent as written"


def text_warnings(templates: Templates, prompts: Prompts) -> list[str]:
    """Braces that the overridden templates and the fixture's own prompts do not fill."""
    own = (placeholder_warning(f"prompts.{name}", getattr(prompts, name)) for name in ("system", "custom_agent"))
    return [*templates.warnings, *(w for w in own if w)]


def _allowed(name: str, slots: tuple[str, ...]) -> str:
    if name == "system_prompt":
        return "its placeholders: " + ", ".join("{{" + p + "}}" for p in SYSTEM_PLACEHOLDERS)
    return "its slots: " + ", ".join("{" + s + "}" for s in slots) if slots else "it has no slots"


def validate_overrides(overrides: Mapping[str, object]) -> list[tuple[str, str]]:
    """(name, problem) for every bad override, in name order (used by the loader)."""
    found = []
    for name in sorted(overrides):
        problem = check_override(name, overrides[name])
        if problem:
            found.append((name, problem))
    return found


@dataclass(frozen=True, slots=True)
class Templates:
    """The built-in texts with the fixture's and `--templates` overrides applied."""

    texts: Mapping[str, str]
    warnings: tuple[str, ...] = ()  # one per overridden template with braces it does not fill

    @classmethod
    def build(cls, *layers: Iterable[tuple[str, str]]) -> Templates:
        texts = {name: text for name, (text, _) in BUILTIN.items()}
        overridden: dict[str, None] = {}
        for layer in layers:
            for name, text in layer:
                texts[name] = text
                overridden[name] = None
        found = (brace_warning(name, texts[name]) for name in sorted(overridden))
        return cls(texts, tuple(w for w in found if w))

    def raw(self, name: str) -> str:
        return self.texts[name]

    def fill(self, template: str, /, **slots: object) -> str:
        """Replace the listed `{slot}`s in one pass (a value is never re-scanned)."""
        text = self.texts[template]
        names = BUILTIN[template][1]
        if not names:
            return text
        return _slot_pattern(names).sub(lambda m: str(slots[m.group(0)[1:-1]]), text)


@functools.cache
def _slot_pattern(names: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("|".join(re.escape("{" + s + "}") for s in names))
