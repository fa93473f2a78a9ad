"""Synthetic benchmark fixtures: (kind, size, seed) → fixture files in a cache folder.

Input: a seed (default 20260314) and an output folder (default: a folder under the
system temp dir, `$CTXKIT_BENCH_DIR` to override; never the repository). Output:
fixture files in the format of SPEC §2, as YAML and as JSON, plus `manifest.json`.
The same seed gives the same bytes; files are regenerated only when this module's
source or the seed changes (the folder name carries both).

Kinds (see `FIXTURES`):

* `small` — a typical fixture: 20 messages, a text file and an image attached, a
  tool call, an in-flight web search; nothing stored, so every text is counted.
* `history-N` — N messages of mixed length (short questions, long answers), with
  tool calls (arguments and full results), attached text files, an in-flight loop;
  no stored counts; no `read_file` tool (so no forgotten-files list: the kept history
  is a suffix, as with the peers). 2,000 messages ≈ 220k tokens; 20,000 ≈ 2.2M tokens,
  ≈ 11 MB.
* `stored-N` — N shorter messages where every message, call and file carries its
  stored `tokens`, so assembly counts only the texts ctxkit generates itself; with
  `read_file`, so the forgotten-files list (R-FILE) runs over ~2,000 files.
* `images-200` — 200 PNG images (real headers, sizes 64 px … 3000 px) attached
  over the history, half with stored counts, an image cap of 50.
* `project-500` — 500 project text files (counted) plus a few metadata-only ones.

Run `python benchmarks/generate.py` to print the folder (generating if needed).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import random
import struct
import sys
import tempfile
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

SEED = 20260314
NOW = "2026-03-14T09:30:00Z"
TOOLS = ["internal_search", "web_search", "open_url", "read_file"]

_WORDS = """
the of and to in is that for it as with was on be by at this are from or have an but not
which one you all were we when there can been has more if will would their what so out up
about into than them only some could time these two may then do first any like now my over
such our man me even most made after also did many before must through back years where much
your way well down should because each just those people how too little state good very make
world still own see men work long get here between both life being under never day same
another know while last might us great old year off come since against go came right used
take three ledger export invoice payment refund currency rounding region quarter forecast
budget revenue margin account customer order ticket release deploy service latency request
response queue cache index schema table column migration rollback incident review planning
roadmap metric dashboard alert threshold window context token model prompt answer summary
search result document citation reminder message branch edit tool function argument value
Python JSON YAML API HTTP SQL Kafka Postgres Redis Kubernetes Terraform GitHub OAuth
""".split()
_ODD = [
    "naïve",
    "café",
    "Über-limit",
    "façade",
    "déjà",
    "Zürich",
    "São",
    "Ångström",
    "日本語",
    "中文",
    "Привет",
    "straße",
    "résumé",
    "–",
    "—",
    "…",
]
_PUNCT = [".", ",", ".", "?", ":", ";", "!"]


class Text:
    """Deterministic pseudo-prose: words, numbers, identifiers, a little non-ASCII."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        pool = _WORDS * 3 + _ODD + [f"{w}_{v}" for w, v in zip(_WORDS[::7], _WORDS[3::7], strict=False)]
        pool += [str(n) for n in (7, 12, 42, 100, 250, 2026, 3.5, 0.75, 1_000, 65_536)]
        pool += [
            rng.choice(("${:,}.{:02d}", "#{}{}", "v{}.{}.1", "2026-0{}-1{}", "({}/{})")).format(
                rng.randint(1, 9999), rng.randint(0, 99)
            )
            for _ in range(25)
        ]
        self.pool = pool

    def words(self, n: int) -> str:
        rng = self.rng
        parts = rng.choices(self.pool, k=max(1, n))
        out: list[str] = []
        sentence = rng.randint(6, 18)
        for i, word in enumerate(parts, start=1):
            out.append(word)
            if i % sentence == 0:
                out[-1] += rng.choice(_PUNCT)
                if rng.random() < 0.15:
                    out[-1] += "\n\n" if rng.random() < 0.5 else "\n- "
        return " ".join(out).replace("\n ", "\n")

    def length(self, mean: int) -> int:
        """Mixed lengths: log-normal around `mean` words, long tail, at least 1."""
        return max(1, int(self.rng.lognormvariate(0, 0.9) * mean / 1.5))


def _stored(text: str) -> int:
    return max(1, len(text) // 4)


def _message_dicts(
    n: int, rng: random.Random, *, stored: bool, scale: float
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """`n` linear messages (user, assistant, …) ending with a user message; and their files."""
    text = Text(rng)
    messages: list[dict[str, Any]] = []
    files: list[dict[str, Any]] = []
    call_no = 0
    for i in range(n):
        user = i % 2 == 0 or i == n - 1
        m: dict[str, Any] = {"id": f"m{i + 1}", "role": "user" if user else "assistant"}
        m["text"] = text.words(text.length(int((35 if user else 200) * scale)))
        if user and rng.random() < 0.04:
            body = text.words(text.length(int(600 * scale)))
            f: dict[str, Any] = {
                "id": f"file-{len(files) + 1:05d}",
                "name": f"notes-{len(files) + 1}.md",
                "kind": "text",
                "text": body,
            }
            if stored:
                f["tokens"] = _stored(body)
            files.append(f)
            m["files"] = [f["id"]]
        if not user and rng.random() < 0.2:
            calls = []
            for turn in range(rng.choice((1, 1, 1, 2))):
                for _ in range(rng.choice((1, 1, 2, 3))):
                    call_no += 1
                    args = {"queries": [text.words(rng.randint(2, 8)) for _ in range(rng.randint(1, 3))]}
                    call: dict[str, Any] = {
                        "id": f"call_{call_no}",
                        "name": rng.choice(("internal_search", "web_search")),
                        "args": args,
                        "turn": turn,
                        "response": text.words(text.length(int(300 * scale))),
                    }
                    if stored:
                        call["tokens"] = _stored(json.dumps(args))
                    calls.append(call)
            m["tool_calls"] = calls
        if stored:
            m["tokens"] = _stored(m["text"])
        messages.append(m)
    return messages, files


def _in_flight(rng: random.Random, stored: bool) -> list[dict[str, Any]]:
    text = Text(rng)
    result = text.words(180)
    call = {"id": "call_live", "name": "web_search", "args": {"queries": [text.words(5)]}}
    tool: dict[str, Any] = {"role": "tool", "tool_call_id": "call_live", "text": result}
    if stored:
        call["tokens"] = 12
        tool["tokens"] = _stored(result)
    return [{"role": "assistant", "tool_calls": [call]}, tool]


def _header(name: str) -> dict[str, Any]:
    return {
        "ctxkit": 1,
        "name": name,
        "now": NOW,
        "model": {"provider": "openai", "name": "gpt-4o"},
        "tokenizer": "cl100k_base",
    }


def history(n: int, seed: int, *, stored: bool = False) -> dict[str, Any]:
    rng = random.Random(f"{seed}:history:{n}:{stored}")
    kind = "stored counts" if stored else "counted"
    doc = _header(f"synthetic history, {n:,} messages ({kind}, seed {seed})")
    # Without read_file the counted histories truncate like the peers do (a kept suffix);
    # with stored counts the forgotten-files list (R-FILE) is exercised at scale too.
    doc["tools"] = TOOLS if stored else [t for t in TOOLS if t != "read_file"]
    messages, files = _message_dicts(n, rng, stored=stored, scale=0.1 if stored else 0.39)
    if files:
        doc["files"] = files
    doc["messages"] = messages
    doc["in_flight"] = _in_flight(rng, stored)
    return doc


def small(seed: int) -> dict[str, Any]:
    rng = random.Random(f"{seed}:small")
    doc = _header(f"a typical fixture: 20 messages (seed {seed})")
    doc["user_info"] = {
        "name": "Ada",
        "email": "ada@example.com",
        "role": "engineer",
        "team": "Payments platform team",
        "memories": ["Prefers Python"],
    }
    doc["prompts"] = {"custom_agent": "Answer as the finance team's analyst."}
    doc["tools"] = TOOLS
    messages, files = _message_dicts(20, rng, stored=False, scale=0.5)
    note = {"id": "notes-1", "name": "notes.md", "kind": "text", "text": Text(rng).words(150)}
    image = {"id": "img-1", "name": "chart.png", "kind": "image", "data": _b64(png(640, 480))}
    doc["files"] = [*files, note, image]
    messages[0]["files"] = [*messages[0].get("files", []), note["id"], image["id"]]
    doc["messages"] = messages
    doc["in_flight"] = _in_flight(rng, False)
    return doc


def images(count: int, seed: int) -> dict[str, Any]:
    rng = random.Random(f"{seed}:images:{count}")
    doc = _header(f"{count} images attached over the history (seed {seed})")
    doc["settings"] = {"image_cap": 50}
    messages, _ = _message_dicts(2 * count, rng, stored=False, scale=0.3)
    files = []
    for k in range(count):
        side = rng.choice((64, 256, 512, 800, 1024, 1600, 2048, 3000))
        f: dict[str, Any] = {
            "id": f"img-{k + 1:04d}",
            "name": f"shot-{k + 1}.png",
            "kind": "image",
            "data": _b64(png(side, max(16, side * rng.choice((3, 4, 9)) // 6))),
        }
        if k % 2:
            f["tokens"] = 765
        files.append(f)
        messages[2 * k]["files"] = [f["id"]]
    doc["files"] = files
    doc["messages"] = messages
    return doc


def project(count: int, seed: int) -> dict[str, Any]:
    rng = random.Random(f"{seed}:project:{count}")
    text = Text(rng)
    doc = _header(f"{count} project files (seed {seed})")
    doc["tools"] = TOOLS
    files: list[dict[str, Any]] = [
        {"id": f"doc-{k + 1:04d}", "name": f"handbook-{k + 1}.md", "kind": "text", "text": text.words(text.length(60))}
        for k in range(count)
    ]
    files += [
        {"id": f"scan-{k + 1}", "name": f"scan-{k + 1}.pdf", "kind": "metadata_only", "chars": 10_000 * (k + 1)}
        for k in range(5)
    ]
    doc["files"] = files
    doc["project_files"] = [f["id"] for f in files]
    messages, _ = _message_dicts(40, rng, stored=False, scale=0.5)
    doc["messages"] = messages
    return doc


def png(width: int, height: int) -> bytes:
    """A valid greyscale PNG of that size (its pixel data compresses to almost nothing)."""

    def chunk(tag: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + tag + body + struct.pack(">I", zlib.crc32(tag + body))

    raw = zlib.compress(b"\x00" * ((width + 1) * height), 9)
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", raw) + chunk(b"IEND", b"")


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


FIXTURES: dict[str, Callable[[int], dict[str, Any]]] = {
    "small": small,
    "history-2000": lambda s: history(2_000, s),
    "history-20000": lambda s: history(20_000, s),
    "stored-10000": lambda s: history(10_000, s, stored=True),
    "stored-100000": lambda s: history(100_000, s, stored=True),
    "images-200": lambda s: images(200, s),
    "project-500": lambda s: project(500, s),
}


# --- writing ----------------------------------------------------------------------------


def to_yaml(doc: Any) -> str:
    """Block-style YAML written directly (fast and byte-stable); strings as JSON literals,
    which are valid YAML double-quoted scalars."""
    return "".join(_yaml_lines(doc, 0))


def _scalar(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _yaml_lines(value: Any, indent: int) -> Iterator[str]:
    pad = " " * indent
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, dict | list) and item:
                yield f"{pad}{key}:\n"
                yield from _yaml_lines(item, indent + 2)
            else:
                yield f"{pad}{key}: {_flow(item)}\n"
    else:
        for item in value:
            if isinstance(item, dict) and item:
                first = True
                for line in _yaml_lines(item, indent + 2):
                    yield (f"{pad}- {line[indent + 2 :]}" if first else line)
                    first = False
            else:
                yield f"{pad}- {_flow(item)}\n"


def _flow(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_flow(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_flow(v) for v in value) + "]"
    return _scalar(value)


def folder(seed: int = SEED) -> Path:
    """The cache folder for this generator version and seed (outside the repository)."""
    version = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:12]
    root = Path(os.environ.get("CTXKIT_BENCH_DIR") or Path(tempfile.gettempdir()) / "ctxkit-bench")
    return root / f"fixtures-{version}-seed{seed}"


def ensure(seed: int = SEED, names: tuple[str, ...] | None = None) -> Path:
    """Generate (once) every fixture as `<name>.yaml` and `<name>.json`; return the folder."""
    out = folder(seed)
    repo = Path(__file__).resolve().parent.parent
    if out.resolve().is_relative_to(repo):
        raise SystemExit(f"refusing to write benchmark fixtures inside the repository: {out}")
    out.mkdir(parents=True, exist_ok=True)
    manifest_path = out / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    for name in names or tuple(FIXTURES):
        if name in manifest and all((out / f"{name}.{ext}").exists() for ext in ("yaml", "json")):
            continue
        doc = FIXTURES[name](seed)
        for ext, text in (("json", json.dumps(doc, ensure_ascii=False, indent=1)), ("yaml", to_yaml(doc))):
            tmp = out / f".{name}.{ext}.tmp"
            tmp.write_text(text, encoding="utf-8")
            tmp.replace(out / f"{name}.{ext}")
        manifest[name] = {
            "messages": len(doc.get("messages", [])),
            "files": len(doc.get("files", [])),
            "bytes_yaml": (out / f"{name}.yaml").stat().st_size,
            "bytes_json": (out / f"{name}.json").stat().st_size,
        }
        manifest_path.write_text(json.dumps(manifest, indent=2, sort_keys=True))
    return out


if __name__ == "__main__":
    seed = int(sys.argv[1]) if len(sys.argv) > 1 else SEED
    print(ensure(seed))
