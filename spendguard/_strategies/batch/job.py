"""One persisted batch job in this process: every change of state, recorded as it happens.

:class:`JobCore` holds no connection to a provider: the decisions of :mod:`.steps` read it,
name the provider operation they need, and record here what the sync or async shell
(:mod:`.shells`) brought back. Each method here changes the job in the ledger's job store in
one transaction, after closing any reservation the change closes, so a process that dies
between two steps is resumed from the last one recorded (a reservation closed twice is
ignored; see :mod:`.holds`).

Request bodies (the prompts) and batch responses are the caller's data: by default they stay in
this process's memory (:attr:`JobCore.bodies`, :attr:`JobCore.responses`) and the ledger keeps
only the request's state. A restarted process fetches batch results again from the provider;
what it cannot do without a body (resubmit, rescue) ends with :data:`NOT_KEPT` in its note.
With ``keep_bodies`` the ledger keeps both until they are no longer needed.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from spendguard._budget.ledger.jobs import JobItem, JobRecord, JobStore
from spendguard._core.errors import BudgetExceeded, ProviderResponseError, SpendguardError
from spendguard._core.money import ZERO
from spendguard._costing.cost import cost
from spendguard._costing.endpoints import Endpoint
from spendguard._costing.prices import PriceTable
from spendguard._costing.usage import Usage, usage_from
from spendguard._strategies.batch.holds import Holds
from spendguard._strategies.batch.results import BatchResult, response_json, standard_usd
from spendguard._strategies.batch.times import epoch, moment
from spendguard._strategies.batch.wire import BatchAPI, LineOutcome, Snapshot, Submitted

__all__ = ["NOT_KEPT", "JobCore"]

NOT_KEPT = ("request body not kept: pass keep_bodies=True (or use a client with "
            "store_prompts=True) to let a restarted process resubmit it")
"""Why a resumed request that needed its body ended without a response."""

_HOST = socket.gethostname()


class JobCore:
    """A job's record and items, and what may happen to them next."""

    def __init__(self, store: JobStore, job: JobRecord, items: list[JobItem], holds: Holds,
                 api: BatchAPI, table: PriceTable, *,
                 bodies: Mapping[str, Mapping[str, Any]] | None = None,
                 keep_bodies: bool = False) -> None:
        self.store = store
        self.job = job
        self.items = {item.custom_id: item for item in items}
        self.holds = holds
        self.api = api
        self.table = table
        self.keep_bodies = keep_bodies
        """Whether the ledger keeps request and batch response bodies (the caller opted in)."""
        self.bodies: dict[str, Mapping[str, Any]] = dict(bodies or {})
        """Request bodies of unfinished requests, by custom id. Kept apart from ``items`` so
        that items read back from the store (which may hold none) never lose them."""
        self.responses: dict[str, Mapping[str, Any]] = {}
        """Batch response bodies held in this process only (not kept in the ledger)."""
        self.objects: dict[str, Any] = {}
        """SDK objects received in this process (fallback responses), by custom id."""

    # -- timing ---------------------------------------------------------------------------

    def rescue_at_s(self) -> float | None:
        """When unfinished requests go to ordinary calls (epoch s), if the job falls back.

        None also when no unfinished request has its body here (a restart without
        ``keep_bodies``): nothing could be sent, so the batch is left to finish.
        """
        if not self.job.fallback or self.job.deadline is None:
            return None
        unfinished = [cid for cid, item in self.items.items() if not item.final]
        if unfinished and not any(cid in self.bodies for cid in unfinished):
            return None
        return epoch(self.job.deadline) - self.job.fallback_lead_s

    def rescue_due(self, now_s: float) -> bool:
        rescue = self.rescue_at_s()
        return rescue is not None and now_s >= rescue

    def unresolved(self) -> bool:
        """Whether some request still waits for its result."""
        return any(not item.final for item in self.items.values())

    def ended(self) -> bool:
        """Whether the provider is done with it and every reservation is closed."""
        return self.job.state in ("ended", "failed")

    def status_line(self) -> str:
        job = self.job
        where = f"{job.provider} {job.provider_batch_id}" if job.provider_batch_id else (
            f"{job.provider}, not submitted")
        seen = job.counts
        counts = (f", {seen.get('done', 0)}/{seen.get('total', job.request_count)} done"
                  if job.provider_status else "")
        return f"batch job {job.id} ({where}): {job.provider_status or job.state}{counts}"

    # -- changes --------------------------------------------------------------------------

    def refresh(self) -> None:
        """Read the job again: another process (``spendguard batches cancel``) may have moved it."""
        job = self.store.get(self.job.id)
        if job is not None and job.updated_at != self.job.updated_at:
            self.job = job
            self.items = {item.custom_id: item for item in self.store.items(job.id)}

    def _save(self, now_s: float, items: Sequence[JobItem] = (), **changes: Any) -> None:
        job = replace(self.job, updated_at=moment(now_s), owner_pid=os.getpid(),
                      owner_host=_HOST, **changes)
        self.store.save(job, items)
        self.job = job
        for item in items:
            self.items[item.custom_id] = item
            if item.final:  # never sent again: no reason to hold the prompt any longer
                self.bodies.pop(item.custom_id, None)

    def pending_requests(self) -> list[tuple[str, Mapping[str, Any]]]:
        return [(item.custom_id, self.bodies[item.custom_id])
                for item in self.items.values() if not item.final]

    def bodies_missing(self) -> bool:
        """Whether some unfinished request has no body here (kept by no one): not sendable."""
        return any(not item.final and item.custom_id not in self.bodies
                   for item in self.items.values())

    def cannot_submit(self, now_s: float) -> None:
        """A restarted process without the bodies cannot (re)submit: release, answer errored.

        Unlike :meth:`submit_failed` nobody received an exception, so the results wait to be
        collected by whoever resumed the job.
        """
        note = (f"the process stopped while submitting and the batch was not found again (the "
                f"provider may have run it, unbudgeted); {NOT_KEPT}"
                if self.job.note == "submitting"
                else f"not submitted before the process stopped; {NOT_KEPT}")
        changed = []
        for item in self.items.values():
            if item.final:
                continue
            if item.hold == "held":
                self.holds.release(self._reservation(item), "batch not submitted")
            changed.append(replace(item, hold="released" if item.hold == "held" else item.hold,
                                   state="errored", body=None, result={"message": note},
                                   note=note))
        self._save(now_s, changed, state="failed", ended_at=moment(now_s), note=note)

    def mark_submitting(self, now_s: float) -> None:
        """Recorded before the request leaves: a restart then looks for the batch first."""
        self._save(now_s, note="submitting")

    def submitted(self, submitted: Submitted, now_s: float) -> None:
        snapshot = submitted.snapshot
        self._save(now_s, state="submitted", provider_batch_id=snapshot.batch_id,
                   provider_status=snapshot.status, counts=dict(snapshot.counts),
                   input_file_id=submitted.input_file_id, submitted_at=moment(now_s), note=None)

    def submit_failed(self, exc: BaseException | str, now_s: float) -> None:
        """The batch was not submitted: release every reservation, fail every request.

        The caller gets the exception instead of results, so nothing is left to collect.
        """
        message = exc if isinstance(exc, str) else f"{type(exc).__name__}: {exc}"
        changed = []
        for item in self.items.values():
            if item.hold == "held":
                self.holds.release(self._reservation(item), "batch not submitted")
            changed.append(replace(item, hold="released" if item.hold == "held" else item.hold,
                                   state="errored" if not item.final else item.state,
                                   body=None, result=None, note=message[:500],
                                   delivered=True))
        self._save(now_s, changed, state="failed", ended_at=moment(now_s), note=message[:500])

    def abandon(self, now_s: float) -> None:
        """Too late for a batch: release the reservations; the requests go to ordinary calls."""
        changed = []
        for item in self.items.values():
            if item.hold == "held":
                self.holds.release(self._reservation(item), "deadline too close for a batch")
                changed.append(replace(item, hold="released"))
        self._save(now_s, changed, state="ended", ended_at=moment(now_s),
                   note="not submitted: the deadline was too close")

    def cancel_unsubmitted(self, now_s: float) -> None:
        """The caller cancelled before the provider had it: release, answer ``cancelled``."""
        changed = []
        for item in self.items.values():
            if item.hold == "held":
                self.holds.release(self._reservation(item), "batch cancelled")
            changed.append(replace(item, hold="released" if item.hold == "held" else item.hold,
                                   state=item.state if item.final else "cancelled", body=None))
        self._save(now_s, changed, state="ended", ended_at=moment(now_s), fallback=False,
                   cancel_requested=True, note="cancelled before it was submitted")

    def observe(self, snapshot: Snapshot, now_s: float) -> None:
        self._save(now_s, provider_status=snapshot.status, counts=dict(snapshot.counts))

    def request_cancel(self, now_s: float, *, rescue: bool) -> None:
        """A cancel was sent; a caller's cancel also turns the fallback off."""
        self._save(now_s, cancel_requested=True,
                   fallback=self.job.fallback and rescue)

    def collect(self, snapshot: Snapshot, lines: list[dict[str, Any]], now_s: float) -> None:
        """The batch ended: settle or release each request, record each result."""
        outcomes = {o.custom_id: o for o in (self.api.outcome(line, self.job.endpoint)
                                             for line in lines)}
        missing = "; ".join(snapshot.errors) or "the batch returned no result for it"
        latency_s = now_s - epoch(self.job.submitted_at or self.job.created_at)
        changed = [self._apply(item, outcomes.get(item.custom_id) or LineOutcome(
            item.custom_id, snapshot.unanswered, error={"message": missing}), latency_s)
            for item in self.items.values()]
        self._save(now_s, changed, state="ended", provider_status=snapshot.status,
                   counts=dict(snapshot.counts), ended_at=moment(now_s))

    def _apply(self, item: JobItem, outcome: LineOutcome, latency_s: float) -> JobItem:
        billed = ZERO
        if item.hold == "held":
            reservation = self._reservation(item)
            if outcome.status == "succeeded":
                usage = outcome.usage
                if usage is None:  # billed, usage unreadable: charge the worst case
                    billed, version = item.worst_usd, self.table.version
                    usage = Usage(estimated=True)
                else:
                    priced = cost(item.model, usage, batch=True, table=self.table)
                    billed, version = priced.total, priced.table_version
                self.holds.settle(reservation, usage, billed, table_version=version,
                                  latency_s=latency_s, request_id=outcome.request_id)
                item = replace(item, hold="settled")
            else:
                self.holds.release(reservation, f"batch {outcome.status}")
                item = replace(item, hold="released")
        if item.final:  # answered already by an ordinary call; the batch may have run it too
            if billed:
                return replace(item, actual_usd=(item.actual_usd or ZERO) + billed,
                               note="also finished by its cancelled batch: billed twice")
            return item
        if outcome.status == "succeeded":
            if not self.keep_bodies and outcome.body is not None:
                # Held here until handed over; after a restart it is fetched again.
                self.responses[item.custom_id] = outcome.body
            return replace(item, state="succeeded", route="batch", body=None,
                           result=outcome.body if self.keep_bodies else None,
                           actual_usd=billed,
                           usage=None if outcome.usage is None else outcome.usage.as_dict())
        if outcome.status in ("expired", "cancelled") and self.job.fallback:
            if item.custom_id in self.bodies:
                return item  # still pending: an ordinary call answers it
            note = f"{outcome.status} in its batch and not rescued: {NOT_KEPT}"
            return replace(item, state=outcome.status, body=None,
                           result={**(outcome.error or {}), "note": note}, note=note)
        return replace(item, state=outcome.status, body=None, result=outcome.error,
                       note=_message(outcome.error))

    def fallback_targets(self, now_s: float) -> list[JobItem]:
        """Requests to send as ordinary calls now (the job falls back and it is time)."""
        if not self.job.fallback:
            return []
        due = self.rescue_due(now_s)
        return [item for item in self.items.values() if not item.final
                and item.custom_id in self.bodies and (due or item.hold != "held")]

    def give_up(self, now_s: float) -> None:
        """End requests the batch did not answer that no ordinary call will answer either.

        Their reservation is already released; without a body here (a restart without
        ``keep_bodies``) or with the rescue turned off, they would otherwise wait forever.
        """
        changed = []
        for item in self.items.values():
            if item.final or item.hold == "held" or (
                    self.job.fallback and item.custom_id in self.bodies):
                continue
            note = (f"not answered by its batch and not rescued: {NOT_KEPT}"
                    if item.custom_id not in self.bodies
                    else "not answered by its batch and not rescued: the fallback is off")
            changed.append(replace(item, state="expired", body=None,
                                   result={"message": note}, note=note))
        if changed:
            self._save(now_s, changed)

    def fell_back(self, item: JobItem, now_s: float, *, response: Any = None,
                  error: BaseException | None = None) -> None:
        """Record what the ordinary call for ``item`` returned (or why it failed)."""
        if error is None:
            self.objects[item.custom_id] = response
            usage = _usage(self.job.provider, response, self.job.endpoint)
            paid = standard_usd(item.model, usage, self.table)
            new = replace(item, state="succeeded", route="fallback", body=None,
                          result=response_json(response),
                          usage=None if usage is None else usage.as_dict(),
                          actual_usd=(item.actual_usd or ZERO) + paid)
        else:
            state = "refused" if isinstance(error, BudgetExceeded) else "errored"
            body = getattr(error, "body", None)
            detail = {"type": type(error).__name__, "message": str(error),
                      **({"body": body} if isinstance(body, dict) else {})}
            new = replace(item, state=state, route="fallback", body=None, result=detail,
                          note=str(error)[:500])
        self._save(now_s, [new])

    def needs_fetch(self, custom_id: str) -> bool:
        """Whether a batch result to hand over is held neither here nor in the ledger:
        collected by another process, or before a restart, without ``keep_bodies``."""
        item = self.items[custom_id]
        return (item.state == "succeeded" and item.route == "batch" and not item.delivered
                and item.result is None and custom_id not in self.responses)

    def missing_responses(self) -> list[str]:
        """The custom ids of :meth:`needs_fetch`: to fetch again from the provider."""
        return [cid for cid in self.items if self.needs_fetch(cid)]

    def refill(self, lines: list[dict[str, Any]]) -> None:
        """Take the missing batch results from the provider's result lines, fetched again.

        Nothing is settled again: the items were settled when they were first collected.
        """
        missing = set(self.missing_responses())
        for line in lines:
            outcome = self.api.outcome(line, self.job.endpoint)
            if outcome.custom_id in missing and outcome.body is not None:
                self.responses[outcome.custom_id] = outcome.body
        lost = self.missing_responses()
        if lost:
            raise ProviderResponseError(
                f"batch job {self.job.id} ({self.job.provider} batch "
                f"{self.job.provider_batch_id}): the provider no longer returns the result of "
                f"{', '.join(lost[:5])}{' ...' if len(lost) > 5 else ''}; they were settled "
                f"but not handed over. Results are kept in the ledger until delivered only "
                f"with keep_bodies=True")

    def _reservation(self, item: JobItem) -> Any:
        endpoint = Endpoint.from_batch_url(self.job.endpoint)
        return self.holds.for_item(item, self.job.provider,
                                   endpoint.value if endpoint else self.job.endpoint)

    # -- results --------------------------------------------------------------------------

    def result(self, item: JobItem) -> BatchResult:
        """A final item as the caller receives it."""
        usage = Usage.from_dict(item.usage) if item.usage else None
        response = self.objects.get(item.custom_id)
        body = item.result if item.result is not None else self.responses.get(item.custom_id)
        if response is None and item.state == "succeeded" and body is not None:
            response = self.api.response_object(self.job.endpoint, body)
        error = None if item.state == "succeeded" else (item.result or {"message": item.note})
        return BatchResult(item.position, item.custom_id, item.state, item.route, item.model,
                           self.job.id, response, error, usage, item.actual_usd or ZERO,
                           standard_usd(item.model, usage, self.table))


def _usage(provider: str, response: Any, path: str) -> Usage | None:
    try:
        return usage_from(provider, response, endpoint=path)
    except SpendguardError:
        return None


def _message(error: Mapping[str, Any] | None) -> str | None:
    if not error:
        return None
    nested = error.get("error")
    inner: Mapping[str, Any] = nested if isinstance(nested, dict) else error
    return str(inner.get("message") or inner.get("type") or error)[:500]
