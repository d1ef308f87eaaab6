"""The job store of a SQLite ledger: tables ``batch_jobs`` and ``batch_items`` (migration m002).

It shares the ledger's connections and ``BEGIN IMMEDIATE`` transactions, so a claim made by one
process is seen by every other before it can claim the same item.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from decimal import Decimal
from typing import Any

from spendguard._budget.ledger.jobs import JobItem, JobRecord, check_items
from spendguard._budget.ledger.sqlite import SqliteLedger
from spendguard._core.errors import LedgerError
from spendguard._core.periods import as_utc

__all__ = ["SqliteJobStore"]

_JOB_COLUMNS = (
    "id, provider, endpoint, state, created_at, updated_at, request_count, worst_usd, "
    "provider_batch_id, provider_status, input_file_id, submitted_at, ended_at, deadline, "
    "fallback, fallback_lead_s, cancel_requested, counts, note, owner_pid, owner_host"
)
_ITEM_COLUMNS = (
    "job_id, custom_id, position, model, worst_usd, holds, hold, state, route, body, result, "
    "usage, actual_usd, note, delivered"
)
_ACTIVE = ("state IN ('reserved', 'submitted') OR EXISTS (SELECT 1 FROM batch_items i "
           "WHERE i.job_id = batch_jobs.id AND i.state != 'pending' AND i.delivered = 0)")


def _ts(moment: datetime | None) -> str | None:
    return None if moment is None else as_utc(moment).isoformat(timespec="microseconds")


def _time(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text)


def _json(value: Mapping[str, Any] | None) -> str | None:
    return None if value is None else json.dumps(value, separators=(",", ":"))


def _job_row(job: JobRecord) -> tuple[Any, ...]:
    return (job.id, job.provider, job.endpoint, job.state, _ts(job.created_at),
            _ts(job.updated_at), job.request_count, str(job.worst_usd), job.provider_batch_id,
            job.provider_status, job.input_file_id, _ts(job.submitted_at), _ts(job.ended_at),
            _ts(job.deadline), int(job.fallback), job.fallback_lead_s, int(job.cancel_requested),
            json.dumps(dict(job.counts)), job.note, job.owner_pid, job.owner_host)


def _job(row: Sequence[Any]) -> JobRecord:
    (job_id, provider, endpoint, state, created, updated, count, worst, batch_id, status,
     file_id, submitted, ended, deadline, fallback, lead_s, cancel, counts, note, pid,
     host) = row
    created_at, updated_at = _time(created), _time(updated)
    assert created_at is not None and updated_at is not None  # NOT NULL columns
    return JobRecord(job_id, provider, endpoint, state, created_at, updated_at, count,
                     Decimal(worst), batch_id, status, file_id, _time(submitted), _time(ended),
                     _time(deadline), bool(fallback), lead_s, bool(cancel), json.loads(counts),
                     note, pid, host)


def _item_row(item: JobItem) -> tuple[Any, ...]:
    return (item.job_id, item.custom_id, item.position, item.model, str(item.worst_usd),
            json.dumps([list(hold) for hold in item.holds]), item.hold, item.state, item.route,
            _json(item.body), _json(item.result), _json(item.usage),
            None if item.actual_usd is None else str(item.actual_usd), item.note,
            int(item.delivered))


def _item(row: Sequence[Any]) -> JobItem:
    (job_id, custom_id, position, model, worst, holds, hold, state, route, body, result, usage,
     actual, note, delivered) = row
    return JobItem(job_id, custom_id, position, model, Decimal(worst),
                   tuple((url, rid) for url, rid in json.loads(holds)), hold, state, route,
                   None if body is None else json.loads(body),
                   None if result is None else json.loads(result),
                   None if usage is None else json.loads(usage),
                   None if actual is None else Decimal(actual), note, bool(delivered))


class SqliteJobStore:
    """Batch jobs in the SQLite ledger's file."""

    def __init__(self, ledger: SqliteLedger) -> None:
        self.ledger = ledger

    def add(self, job: JobRecord, items: Sequence[JobItem]) -> None:
        check_items(job, items)
        with self.ledger._transaction() as tx:
            if tx.db.execute("SELECT 1 FROM batch_jobs WHERE id = ?", (job.id,)).fetchone():
                raise LedgerError(f"batch job {job.id} is already recorded")
            tx.db.execute(f"INSERT INTO batch_jobs ({_JOB_COLUMNS}) VALUES "
                          f"({', '.join('?' * 21)})", _job_row(job))
            tx.db.executemany(f"INSERT INTO batch_items ({_ITEM_COLUMNS}) VALUES "
                              f"({', '.join('?' * 15)})", [_item_row(item) for item in items])

    def get(self, job_id: str) -> JobRecord | None:
        row = self.ledger._connection().execute(
            f"SELECT {_JOB_COLUMNS} FROM batch_jobs WHERE id = ?", (job_id,)).fetchone()
        return None if row is None else _job(row)

    def jobs(self, *, active: bool = False) -> list[JobRecord]:
        where = f" WHERE {_ACTIVE}" if active else ""
        rows = self.ledger._connection().execute(
            f"SELECT {_JOB_COLUMNS} FROM batch_jobs{where} ORDER BY created_at DESC, rowid DESC"
        ).fetchall()
        return [_job(row) for row in rows]

    def items(self, job_id: str) -> list[JobItem]:
        rows = self.ledger._connection().execute(
            f"SELECT {_ITEM_COLUMNS} FROM batch_items WHERE job_id = ? ORDER BY position",
            (job_id,)).fetchall()
        return [_item(row) for row in rows]

    def save(self, job: JobRecord, items: Iterable[JobItem] = ()) -> None:
        items = list(items)
        with self.ledger._transaction() as tx:
            row = _job_row(job)
            changed = tx.db.execute(
                f"UPDATE batch_jobs SET ({_JOB_COLUMNS}) = ({', '.join('?' * 21)}) "
                f"WHERE id = ?", (*row, job.id)).rowcount
            if changed != 1:
                raise LedgerError(f"no batch job {job.id} in ledger {self.ledger.url}")
            for item in items:
                if item.job_id != job.id:
                    raise LedgerError(f"batch job {job.id} has no item {item.custom_id!r}")
                updated = tx.db.execute(
                    f"UPDATE batch_items SET ({_ITEM_COLUMNS}) = ({', '.join('?' * 15)}) "
                    f"WHERE job_id = ? AND custom_id = ?",
                    (*_item_row(item), item.job_id, item.custom_id)).rowcount
                if updated != 1:
                    raise LedgerError(f"batch job {job.id} has no item {item.custom_id!r}")

    def claim(self, job_id: str, custom_ids: Iterable[str] | None = None) -> list[JobItem]:
        wanted = None if custom_ids is None else set(custom_ids)
        with self.ledger._transaction() as tx:
            # Read and mark under the write lock: another process cannot claim in between.
            rows = tx.db.execute(
                f"SELECT {_ITEM_COLUMNS} FROM batch_items WHERE job_id = ? AND delivered = 0 "
                f"AND state != 'pending' ORDER BY position", (job_id,)).fetchall()
            claimed = [replace(item, delivered=True) for item in map(_item, rows)
                       if wanted is None or item.custom_id in wanted]
            tx.db.executemany(
                "UPDATE batch_items SET delivered = 1, result = NULL "
                "WHERE job_id = ? AND custom_id = ?",
                [(job_id, item.custom_id) for item in claimed])
        return claimed
