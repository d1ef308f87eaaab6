"""OpenAI Files: upload (multipart), list, retrieve, delete and download content.

Batch input files are uploaded here and batch output / error files are written here, so the
SDK's ``files.content(output_file_id)`` reads results exactly as it would from OpenAI.
"""

from __future__ import annotations

from dataclasses import dataclass
from email.parser import BytesParser
from email.policy import HTTP
from typing import Any

from spendguard.testing.state import Ctx, State
from spendguard.testing.wire import EmulatedError, WireResponse, json_response

__all__ = ["StoredFile", "delete_file", "file_content", "list_files", "put_file",
           "retrieve_file", "upload_file"]

PURPOSES = frozenset({"assistants", "batch", "fine-tune", "vision", "user_data", "evals"})
BATCH_FILE_TTL_S = 30 * 24 * 3600  # "files with purpose=batch expire after 30 days"


@dataclass(frozen=True, slots=True)
class StoredFile:
    """One file the emulator holds."""

    id: str
    filename: str
    purpose: str
    data: bytes
    created_at: int

    def json(self) -> dict[str, Any]:
        expires = self.created_at + BATCH_FILE_TTL_S if self.purpose.startswith("batch") else None
        return {"id": self.id, "object": "file", "bytes": len(self.data),
                "created_at": self.created_at, "filename": self.filename,
                "purpose": self.purpose, "status": "processed", "expires_at": expires,
                "status_details": None}


def put_file(state: State, *, filename: str, purpose: str, data: bytes,
             now_s: float) -> StoredFile:
    stored = StoredFile(state.ids.new("file-emu-"), filename, purpose, data, int(now_s))
    state.files[stored.id] = stored
    return stored


def get_file(state: State, file_id: str) -> StoredFile:
    stored = state.files.get(file_id)
    if not isinstance(stored, StoredFile):
        raise EmulatedError(404, f"No such File object: {file_id}", param="id")
    return stored


def _multipart(ctx: Ctx) -> dict[str, tuple[str | None, bytes]]:
    content_type = ctx.request.headers.get("content-type", "")
    if not content_type.startswith("multipart/form-data"):
        raise EmulatedError(400, "Files are uploaded as multipart/form-data.")
    message = BytesParser(policy=HTTP).parsebytes(
        b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + ctx.request.body)
    fields: dict[str, tuple[str | None, bytes]] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True)
        if isinstance(name, str) and isinstance(payload, bytes):
            fields[name] = (part.get_filename(), payload)
    return fields


def upload_file(ctx: Ctx, params: dict[str, str]) -> WireResponse:
    fields = _multipart(ctx)
    purpose = fields.get("purpose", (None, b""))[1].decode()
    if purpose not in PURPOSES:
        raise EmulatedError(400, f"'{purpose}' is not one of {sorted(PURPOSES)} - 'purpose'",
                            param="purpose")
    if "file" not in fields:
        raise EmulatedError(400, "Missing required parameter: 'file'.", param="file")
    filename, data = fields["file"]
    stored = put_file(ctx.state, filename=filename or "upload", purpose=purpose, data=data,
                      now_s=ctx.now_s)
    response = json_response("openai", ctx.request_id, stored.json())
    response.extra["logged_body"] = {"purpose": purpose, "filename": stored.filename,
                                     "bytes": len(data)}
    return response


def list_files(ctx: Ctx, params: dict[str, str]) -> WireResponse:
    query = ctx.request.query
    files = [f for f in ctx.state.files.values()
             if isinstance(f, StoredFile) and query.get("purpose") in (None, f.purpose)]
    files.sort(key=lambda f: f.created_at, reverse=query.get("order", "desc") == "desc")
    if "after" in query:
        ids = [f.id for f in files]
        files = files[ids.index(query["after"]) + 1:] if query["after"] in ids else []
    limit = int(query.get("limit", "10000"))
    page = files[:limit]
    return json_response("openai", ctx.request_id, {
        "object": "list", "data": [f.json() for f in page], "has_more": len(files) > limit,
        "first_id": page[0].id if page else None, "last_id": page[-1].id if page else None})


def retrieve_file(ctx: Ctx, params: dict[str, str]) -> WireResponse:
    return json_response("openai", ctx.request_id, get_file(ctx.state, params["id"]).json())


def delete_file(ctx: Ctx, params: dict[str, str]) -> WireResponse:
    stored = get_file(ctx.state, params["id"])
    del ctx.state.files[stored.id]
    return json_response("openai", ctx.request_id,
                         {"id": stored.id, "object": "file", "deleted": True})


def file_content(ctx: Ctx, params: dict[str, str]) -> WireResponse:
    stored = get_file(ctx.state, params["id"])
    return json_response("openai", ctx.request_id, stored.data,
                         content_type="application/octet-stream")
