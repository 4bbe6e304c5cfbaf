"""Sending a reaction's dead letters again (``drasi-ray dlq replay --reaction``).

Each dead letter of a diff (:class:`~drasi_ray.reactions.dead_letters.ReactionDeadLetter`) is
rendered again by the reaction's own endpoint (:class:`~drasi_ray.reactions.relay.Endpoint`:
its templates or procedure calls as the app file has them now, its headers and token), with
the same idempotency key ``<queryId>:<sequence>:<index>``, and sent with the reaction's retry
policy (``max_attempts``, backoff from ``retry_initial_ms`` to ``retry_max_ms``). A receiver
that drops a repeated key sees it once however often it is replayed. Nothing here touches
Redis: the caller deletes the dead letters that were delivered and keeps the others.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from drasi_ray.model.backoff import Backoff
from drasi_ray.reactions.dead_letters import ReactionDeadLetter
from drasi_ray.reactions.relay import Endpoint, Outcome, Verdict


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """A reaction's retries (its spec's ``max_attempts``, ``retry_initial_ms``,
    ``retry_max_ms``)."""

    max_attempts: int
    retry_initial_ms: int
    retry_max_ms: int


async def redeliver(endpoint: Endpoint, letter: ReactionDeadLetter, policy: RetryPolicy) -> Outcome:
    """Render ``letter``'s diff with ``endpoint`` and send it until it is delivered, refused or
    out of attempts. A diff the reaction now sends nothing for (its change kind has no call)
    counts as delivered; one that cannot be rendered is refused. Never raises for a failed
    delivery; ValueError for a dead letter with no diff (an unreadable result entry)."""
    if letter.diff is None:
        raise ValueError(f"dead letter of result entry {letter.entry} holds no diff to deliver")
    call = endpoint.render(
        letter.query, letter.sequence, letter.index, letter.diff, letter.source_time_ms
    )
    if call.error is not None:
        return Outcome(Verdict.REFUSED, call.error)
    if call.payload is None:
        return Outcome(Verdict.DELIVERED, f"nothing to send for {call.kind} changes")
    backoff = Backoff(policy.retry_initial_ms / 1000, policy.retry_max_ms / 1000)
    attempts = 0
    while True:
        outcome = await endpoint.send([call])
        attempts += 1
        if outcome.verdict is not Verdict.RETRY or attempts >= policy.max_attempts:
            return outcome
        await backoff.wait()


async def redeliver_all(
    endpoint: Endpoint, letters: Sequence[ReactionDeadLetter], policy: RetryPolicy
) -> list[Outcome]:
    """:func:`redeliver` each of ``letters`` in order (one at a time: the order the reaction
    would have sent them in), then release the endpoint."""
    try:
        return [await redeliver(endpoint, letter, policy) for letter in letters]
    finally:
        await endpoint.close()
