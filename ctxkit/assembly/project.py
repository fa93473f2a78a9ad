"""Project files (R-PROJ-1…3) and read_file lists (R-FILE-2).

Input: the fixture's `project_files`, the reserved tokens and the meter.
Output: `ProjectPart` — the documents message, the project's read_file list,
the images for the last user message, and each file's fate.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from ctxkit.counting.measure import Meter
from ctxkit.history.convert import require_image_cost
from ctxkit.history.working import Fate, Image, Kind, Origin, Segment, Working
from ctxkit.loading.config import Effective
from ctxkit.loading.domain import FileKind, FileRecord
from ctxkit.loading.templates import Templates


@dataclass(frozen=True, slots=True)
class ProjectPart:
    documents: Working | None
    read_file_list: Working | None
    images: tuple[Image, ...]
    fates: tuple[tuple[FileRecord, Fate, str, Segment | None], ...]  # file, fate, rule, segment
    fits: bool
    cite: bool  # project text documents are in context or used as a search filter

    def tokens(self, meter: Meter) -> int:
        total = sum(meter.of(w) for w in (self.documents, self.read_file_list) if w)
        return total + sum(meter.image(i) for i in self.images)


def read_file_list(entries: Sequence[tuple[FileRecord, bool]], t: Templates) -> str:
    """R-FILE-2: the header and one line per file; unknown sizes show as ~0 chars."""
    lines = [t.raw("forgotten_files.header")]
    for f, known in entries:
        chars = f"{f.size_chars:,}" if known else "0"
        lines.append(t.fill("forgotten_files.line", id=f.id, name=f.name, chars=chars))
    return "\n".join(lines)


def documents_text(texts: Sequence[FileRecord], t: Templates) -> str:
    """R-PROJ-2: the preamble line, then the documents as 2-space-indented JSON."""
    docs = {
        "documents": [{"document": n, "title": f.name, "contents": f.text or ""} for n, f in enumerate(texts, start=1)]
    }
    return t.raw("documents_preamble") + "\n" + json.dumps(docs, indent=2, ensure_ascii=False)


def build(eff: Effective, meter: Meter, reserved: int) -> ProjectPart:
    files = {f.id: f for f in eff.fixture.files}
    project = [files[i] for i in eff.fixture.project_files]
    texts = [f for f in project if f.kind is FileKind.TEXT]
    imgs = [f for f in project if f.kind is FileKind.IMAGE]
    for f in imgs:
        require_image_cost(eff.fixture, f)
    meta = [f for f in project if f.kind is FileKind.METADATA_ONLY]
    total = sum(f.tokens if f.tokens is not None else meter.text(f.text or "") for f in texts)
    threshold = Decimal(eff.max_input_tokens - reserved) * eff.settings.project_files_max_ratio
    fits = Decimal(total) < threshold
    fates: list[tuple[FileRecord, Fate, str, Segment | None]] = []
    listed: list[FileRecord] = []
    documents = None
    images: tuple[Image, ...] = ()
    if fits:
        if texts:
            documents = Working(
                "project#documents", Kind.USER, documents_text(texts, eff.templates), total, origin=Origin.DOCUMENTS
            )
        images = tuple(Image(f.id, f.data, f.tokens, project=True) for f in imgs)
        fates += [(f, Fate.KEPT, "R-PROJ-2", Segment.PROJECT_FILES) for f in texts + imgs]
        cite = bool(texts)
    elif eff.settings.vector_db:
        fates += [(f, Fate.SEARCH_FILTER, "R-PROJ-1", None) for f in texts + imgs]
        cite = bool(texts)
    else:
        listed += texts + imgs
        cite = False
    listed += meta
    fates += [(f, Fate.FORGOTTEN, "R-PROJ-1", Segment.PROJECT_FILES) for f in listed]
    order = {fid: n for n, fid in enumerate(eff.fixture.project_files)}
    listed.sort(key=lambda f: order[f.id])
    fates.sort(key=lambda x: order[x[0].id])
    rf = None
    if listed:
        text = read_file_list([(f, True) for f in listed], eff.templates)
        rf = Working("project#read_file", Kind.USER, text, None, origin=Origin.PROJECT_READ_FILE)
    return ProjectPart(
        documents=documents,
        read_file_list=rf,
        images=images,
        fates=tuple(fates),
        fits=fits,
        cite=cite,
    )
