"""``drasi-ray dlq ACTION REACTION APP_YAML --reaction``: an HTTP or stored-procedure
reaction's dead letters (``drasi:<app>:reaction:<id>:dlq``, on the Redis of its queries'
result streams).

``replay`` renders each diff again with the reaction as the app file configures it (its
templates or procedure calls, headers, token or password: read here, from this process's
environment and files, as ``run`` reads them) and sends it with the same idempotency key and
the reaction's retries (:mod:`drasi_ray.reactions.redelivery`); a delivered one is deleted, one
that fails again is kept, with the reason printed. It needs no running app. A dead letter of an
unreadable result entry has no diff to send: it can be shown and purged.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from typing import Any

import orjson
import redis

from drasi_ray.model import encoding, keys
from drasi_ray.model.config import AppConfig
from drasi_ray.model.errors import ConfigError, UnknownComponentError
from drasi_ray.model.reaction_specs import HttpReaction, RelayedReaction, SseReaction
from drasi_ray.ops import common
from drasi_ray.reactions.dead_letters import ReactionDeadLetter
from drasi_ray.reactions.relay import Endpoint, Verdict

PAGE = 500
PREVIEW = 300
"""Characters of the diff ``dlq list`` shows (``dlq show`` shows it all)."""


def relayed_reactions(config: AppConfig) -> dict[str, RelayedReaction]:
    """The app's reactions that keep dead letters (HTTP and stored-procedure), by id."""
    return {spec.id: spec for spec in config.reactions if not isinstance(spec, SseReaction)}


def reaction_spec(config: AppConfig, reaction_id: str) -> RelayedReaction:
    found = relayed_reactions(config)
    if reaction_id in found:
        return found[reaction_id]
    if any(spec.id == reaction_id for spec in config.reactions):
        raise ConfigError(f"reaction {reaction_id!r} serves browsers (sse): it has no dead letters")
    known = ", ".join(found) or "none"
    raise UnknownComponentError(
        f"unknown reaction {reaction_id!r} (reactions with dead letters: {known})"
    )


def redis_url(config: AppConfig, spec: RelayedReaction) -> str:
    """The Redis of the reaction's result streams, positions and dead letters."""
    first = next(iter(spec.queries))
    query = next(query for query in config.queries if query.id == first)
    return common.result_stream(config, query)[0]


def run(args: argparse.Namespace, config: AppConfig, ids: list[str] | None) -> int:
    """One action on the dead letters of reaction ``args.source`` (``dlq --reaction``)."""
    if args.payload is not None or args.force:
        raise ConfigError("--payload and --force go with a source's dead letters, not --reaction")
    spec = reaction_spec(config, args.source)
    key = keys.reaction_dead_letters(config.id, spec.id)
    with common.connect(config, redis_url(config, spec), f"reaction {spec.id!r}") as client:
        if ids is not None:
            common.require_present(client, key, ids)
        if args.action == "list":
            letters = dead_letters(client, key, ids)
            print(f"{len(letters)} dead letter(s) in {key}")
            for dlq_id, letter in letters[: args.limit]:
                print("\n".join(list_lines(dlq_id, letter)))
        elif args.action == "show":
            if ids is None:
                raise ConfigError("dlq show needs --id DLQ_ID (see dlq list)")
            for dlq_id, letter in dead_letters(client, key, ids):
                print("\n".join(show_lines(dlq_id, letter)))
        elif args.action == "replay":
            return replay(client, key, config, spec, ids)
        else:
            count = purge(client, key, ids)
            print(f"purged {count} dead letter(s) from {key}")
    return 0


def dead_letters(
    client: redis.Redis, key: str, ids: Sequence[str] | None = None
) -> list[tuple[str, ReactionDeadLetter]]:
    """``(dead-letter id, ReactionDeadLetter)`` pairs, oldest first (only ``ids`` if given)."""
    if ids:
        pages: list[Any] = [client.xrange(key, dlq_id, dlq_id) for dlq_id in ids]
        return [_decoded(i, f) for page in pages for i, f in page]
    found: list[tuple[str, ReactionDeadLetter]] = []
    start = "-"
    while True:
        page: Any = client.xrange(key, start, "+", count=PAGE)
        found += [_decoded(i, f) for i, f in page]
        if len(page) < PAGE:
            return found
        start = "(" + common.text(page[-1][0])


def _decoded(dlq_id: Any, fields: Any) -> tuple[str, ReactionDeadLetter]:
    try:
        return common.text(dlq_id), ReactionDeadLetter.from_fields(fields)
    except (KeyError, ValueError, orjson.JSONDecodeError) as exc:
        raise ConfigError(f"dead letter {common.text(dlq_id)} cannot be read: {exc}") from None


def list_lines(dlq_id: str, letter: ReactionDeadLetter) -> list[str]:
    if not letter.deliverable:
        return [
            f"{dlq_id}  query {letter.query} result entry {letter.entry} (unreadable)  "
            f"reason: {letter.reason}"
        ]
    diff = encoding.dumps(dict(letter.diff or {})).decode()
    if len(diff) > PREVIEW:
        diff = diff[:PREVIEW] + f"... ({len(diff)} characters: dlq show)"
    return [
        f"{dlq_id}  {letter.key} {letter.kind}  attempts {letter.attempts}  "
        f"reason: {letter.reason}",
        f"    request: {letter.request or '(not sent)'}",
        f"    diff: {diff}",
    ]


def show_lines(dlq_id: str, letter: ReactionDeadLetter) -> list[str]:
    lines = [
        f"dead letter {dlq_id} of reaction {letter.reaction}",
        f"  query:      {letter.query}",
        f"  reason:     {letter.reason}",
    ]
    if not letter.deliverable:
        raw = letter.raw.decode("utf-8", errors="replace")
        return [*lines, f"  entry:      {letter.entry} (unreadable result entry)", f"  data: {raw}"]
    diff = encoding.dumps(dict(letter.diff or {}), indent=True).decode()
    return [
        *lines,
        f"  key:        {letter.key} ({letter.kind}, result sequence {letter.sequence})",
        f"  attempts:   {letter.attempts}",
        f"  request:    {letter.request or '(not sent)'}",
        "  diff:",
        *(f"    {line}" for line in diff.splitlines()),
    ]


def replay(
    client: redis.Redis,
    key: str,
    config: AppConfig,
    spec: RelayedReaction,
    ids: list[str] | None,
) -> int:
    """Send the dead letters again through the reaction (module docstring); delete the
    delivered ones. 0 if every one was delivered, else 1 (each failure on stderr)."""
    from drasi_ray.reactions.redelivery import RetryPolicy, redeliver_all

    letters = dead_letters(client, key, ids)
    unreadable = [dlq_id for dlq_id, letter in letters if not letter.deliverable]
    if ids is not None and unreadable:
        raise ConfigError(
            f"dead letter {unreadable[0]} holds an unreadable result entry, no diff to send: "
            f"purge it (dlq purge {spec.id} --reaction --id {unreadable[0]})"
        )
    sendable = [(dlq_id, letter) for dlq_id, letter in letters if letter.deliverable]
    policy = RetryPolicy(spec.max_attempts, spec.retry_initial_ms, spec.retry_max_ms)
    outcomes = asyncio.run(
        redeliver_all(endpoint(config, spec), [letter for _, letter in sendable], policy)
    )
    delivered = [
        dlq_id
        for (dlq_id, _), outcome in zip(sendable, outcomes, strict=True)
        if outcome.verdict is Verdict.DELIVERED
    ]
    if delivered:
        client.xdel(key, *delivered)
    failed = [
        (dlq_id, outcome)
        for (dlq_id, _), outcome in zip(sendable, outcomes, strict=True)
        if outcome.verdict is not Verdict.DELIVERED
    ]
    print(f"replayed {len(delivered)} dead letter(s) through reaction {spec.id!r}")
    for dlq_id, outcome in failed:
        print(f"drasi-ray: {dlq_id} not delivered (kept): {outcome.reason}", file=sys.stderr)
    if unreadable:
        print(f"kept {len(unreadable)} unreadable result entr(ies): see dlq list, then purge")
    return 1 if failed else 0


def endpoint(config: AppConfig, spec: RelayedReaction) -> Endpoint:
    """The reaction's endpoint as the app builds it, its secret read now."""
    from drasi_ray.host.runner import make_engine
    from drasi_ray.reactions.http import HttpEndpoint, resolve_token
    from drasi_ray.reactions.storedproc import StoredProcEndpoint, read_password

    if isinstance(spec, HttpReaction):
        return HttpEndpoint(spec, resolve_token(spec))
    columns = {q.id: make_engine(q).column_names for q in config.queries if q.id in spec.queries}
    return StoredProcEndpoint(spec, read_password(spec), columns)


def purge(client: redis.Redis, key: str, ids: list[str] | None) -> int:
    """Delete the given dead letters (all when ``ids`` is None; the caller checked they are
    there); how many."""
    if ids:
        return int(client.xdel(key, *ids))
    count = int(client.xlen(key))
    client.delete(key)
    return count
