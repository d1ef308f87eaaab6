"""The job store of a PostgreSQL ledger: tables ``batch_jobs`` and ``batch_items`` (q002).

Each method is one transaction of the ledger's, run again on a new connection when it failed
before its commit (as the ledger's own steps are). A claim reads the undelivered items
``FOR UPDATE`` and marks them in the same transaction, so two processes claiming at once get
disjoint items: the second waits for the first's commit and then finds them delivered.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from spendguard._budget.ledger.jobs import JobItem, JobRecord, check_items
from spendguard._budget.ledger.postgres import PostgresLedger
from spendguard._core.errors import LedgerError
from spendguard._core.periods import as_utc

__all__ = ["PostgresJobStore"]

_JOB_COLUMNS = (
    "id, provider, endpoint, state, created_at, updated_at, request_count, worst_usd, "
    "provider_batch_id, provider_status, input_file_id, submitted_at, ended_at, deadline, "
    "fallback, fallback_lead_s, cancel_requested, counts, note, owner_pid, owner_host"
)
_JOB_VALUES = ", ".join(["%s"] * 17 + ["%s::json"] + ["%s"] * 3)
_ITEM_COLUMNS = (
    "job_id, custom_id, position, model, worst_usd, holds, hold, state, route, body, result, "
    "usage, actual_usd, note, delivered"
)
_ITEM_VALUES = ", ".join(["%s"] * 5 + ["%s::json"] + ["%s"] * 3 + ["%s::json"] * 3
                         + ["%s"] * 3)


def _utc(moment: datetime | None) -> datetime | None:
    return None if moment is None else as_utc(moment)


def _json(value: Mapping[str, Any] | None) -> str | None:
    return None if value is None else json.dumps(value, separators=(",", ":"))


def _job_row(job: JobRecord) -> tuple[Any, ...]:
    return (job.id, job.provider, job.endpoint, job.state, _utc(job.created_at),
            _utc(job.updated_at), job.request_count, job.worst_usd, job.provider_batch_id,
            job.provider_status, job.input_file_id, _utc(job.submitted_at), _utc(job.ended_at),
            _utc(job.deadline), job.fallback, job.fallback_lead_s, job.cancel_requested,
            json.dumps(dict(job.counts)), job.note, job.owner_pid, job.owner_host)


def _job(row: Sequence[Any]) -> JobRecord:
    (job_id, provider, endpoint, state, created, updated, count, worst, batch_id, status,
     file_id, submitted, ended, deadline, fallback, lead_s, cancel, counts, note, pid,
     host) = row
    return JobRecord(job_id, provider, endpoint, state, as_utc(created), as_utc(updated), count,
                     worst, batch_id, status, file_id, _utc(submitted), _utc(ended),
                     _utc(deadline), fallback, lead_s, cancel, counts, note, pid, host)


def _item_row(item: JobItem) -> tuple[Any, ...]:
    return (item.job_id, item.custom_id, item.position, item.model, item.worst_usd,
            json.dumps([list(hold) for hold in item.holds]), item.hold, item.state, item.route,
            _json(item.body), _json(item.result), _json(item.usage), item.actual_usd,
            item.note, item.delivered)


def _item(row: Sequence[Any]) -> JobItem:
    (job_id, custom_id, position, model, worst, holds, hold, state, route, body, result, usage,
     actual, note, delivered) = row
    return JobItem(job_id, custom_id, position, model, worst,
                   tuple((url, rid) for url, rid in holds), hold, state, route, body, result,
                   usage, actual, note, delivered)


class PostgresJobStore:
    """Batch jobs in the PostgreSQL ledger's schema."""

    def __init__(self, ledger: PostgresLedger) -> None:
        self.ledger = ledger
        self._s = f'"{ledger.schema}".'

    def add(self, job: JobRecord, items: Sequence[JobItem]) -> None:
        check_items(job, items)
        self.ledger._retried(lambda: self._add(job, items))

    def _add(self, job: JobRecord, items: Sequence[JobItem]) -> None:
        with self.ledger._transaction() as tx:
            tx.cursor.execute(f"INSERT INTO {self._s}batch_jobs ({_JOB_COLUMNS}) VALUES "
                              f"({_JOB_VALUES}) ON CONFLICT (id) DO NOTHING", _job_row(job))
            if tx.cursor.rowcount != 1:
                raise LedgerError(f"batch job {job.id} is already recorded")
            tx.cursor.executemany(f"INSERT INTO {self._s}batch_items ({_ITEM_COLUMNS}) "
                                  f"VALUES ({_ITEM_VALUES})", [_item_row(i) for i in items])

    def get(self, job_id: str) -> JobRecord | None:
        rows = self._read(f"SELECT {_JOB_COLUMNS} FROM {self._s}batch_jobs WHERE id = %s",
                          (job_id,))
        return _job(rows[0]) if rows else None

    def jobs(self, *, active: bool = False) -> list[JobRecord]:
        where = (f" WHERE state IN ('reserved', 'submitted') OR EXISTS (SELECT 1 FROM "
                 f"{self._s}batch_items i WHERE i.job_id = batch_jobs.id AND "
                 f"i.state != 'pending' AND NOT i.delivered)") if active else ""
        rows = self._read(f"SELECT {_JOB_COLUMNS} FROM {self._s}batch_jobs{where} "
                          f"ORDER BY created_at DESC, seq DESC", ())
        return [_job(row) for row in rows]

    def items(self, job_id: str) -> list[JobItem]:
        rows = self._read(f"SELECT {_ITEM_COLUMNS} FROM {self._s}batch_items "
                          f"WHERE job_id = %s ORDER BY position", (job_id,))
        return [_item(row) for row in rows]

    def save(self, job: JobRecord, items: Iterable[JobItem] = ()) -> None:
        listed = list(items)
        self.ledger._retried(lambda: self._save(job, listed))

    def _save(self, job: JobRecord, items: list[JobItem]) -> None:
        with self.ledger._transaction() as tx:
            tx.cursor.execute(f"UPDATE {self._s}batch_jobs SET ({_JOB_COLUMNS}) = "
                              f"ROW({_JOB_VALUES}) WHERE id = %s", (*_job_row(job), job.id))
            if tx.cursor.rowcount != 1:
                raise LedgerError(f"no batch job {job.id} in ledger {self.ledger.shown_url}")
            for item in items:
                if item.job_id != job.id:
                    raise LedgerError(f"batch job {job.id} has no item {item.custom_id!r}")
                tx.cursor.execute(f"UPDATE {self._s}batch_items SET ({_ITEM_COLUMNS}) = "
                                  f"ROW({_ITEM_VALUES}) WHERE job_id = %s AND custom_id = %s",
                                  (*_item_row(item), item.job_id, item.custom_id))
                if tx.cursor.rowcount != 1:
                    raise LedgerError(f"batch job {job.id} has no item {item.custom_id!r}")

    def claim(self, job_id: str, custom_ids: Iterable[str] | None = None) -> list[JobItem]:
        wanted = None if custom_ids is None else set(custom_ids)
        return self.ledger._retried(lambda: self._claim(job_id, wanted))

    def _claim(self, job_id: str, wanted: set[str] | None) -> list[JobItem]:
        with self.ledger._transaction() as tx:
            # Locked as read: a concurrent claim waits, then sees them delivered.
            tx.cursor.execute(f"SELECT {_ITEM_COLUMNS} FROM {self._s}batch_items WHERE "
                              f"job_id = %s AND NOT delivered AND state != 'pending' "
                              f"ORDER BY position FOR UPDATE", (job_id,))
            claimed = [replace(item, delivered=True) for item in map(_item, tx.cursor.fetchall())
                       if wanted is None or item.custom_id in wanted]
            tx.cursor.executemany(
                f"UPDATE {self._s}batch_items SET delivered = true, result = NULL "
                f"WHERE job_id = %s AND custom_id = %s",
                [(job_id, item.custom_id) for item in claimed])
        return claimed

    def _read(self, sql: str, params: tuple[Any, ...]) -> list[Any]:
        return self.ledger._retried(lambda: self._read_once(sql, params))

    def _read_once(self, sql: str, params: tuple[Any, ...]) -> list[Any]:
        with self.ledger._snapshot() as tx:
            tx.cursor.execute(sql, params)
            rows: list[Any] = tx.cursor.fetchall()
            return rows
