"""The HTTP reaction's templates and calls: rendering, escaping, and what is refused."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from drasi_ray import ConfigError
from drasi_ray.model.reaction_specs import HttpCall, HttpQueryCalls, HttpReaction
from drasi_ray.reactions.feed import ResultEntry
from drasi_ray.reactions.http import HttpEndpoint, HttpRequest, check_query, resolve_token
from drasi_ray.reactions.templates import Mode, compile_template

CONTEXT: dict[str, Any] = {
    "after": {"id": "a/b c", "name": 'say "hi"\n', "t": 70.0, "tags": ["x"], "gone": None},
    "before": None,
    "queryId": "hot",
    "sequence": 7,
    "kind": "added",
    "sourceTimeMs": 5,
}


@pytest.mark.parametrize(
    ("text", "mode", "expected"),
    [
        ("/s/{{after.id}}", Mode.URL, "/s/a%2Fb%20c"),
        ('{"n": "{{after.name}}"}', Mode.BODY, '{"n": "say \\"hi\\"\\n"}'),
        ('{"t": {{json after.t}}, "g": {{json after.gone}}}', Mode.BODY, '{"t": 70.0, "g": null}'),
        ("{{after.t}}|{{after.gone}}|{{before.id}}|{{json before}}", Mode.HEADER, "70.0|||null"),
        ("{{ json after.tags }} {{queryId}}#{{sequence}}", Mode.BODY, '["x"] hot#7'),
        ("{{after.tags}}", Mode.BODY, '[\\"x\\"]'),
    ],
)
def test_a_template_writes_values_escaped_for_where_it_is(
    text: str, mode: Mode, expected: str
) -> None:
    assert compile_template(text, mode).render(CONTEXT) == expected


def test_a_body_template_with_quoted_placeholders_stays_valid_json() -> None:
    body = compile_template('{"id": "{{after.id}}", "name": "{{after.name}}"}', Mode.BODY)
    assert orjson.loads(body.render(CONTEXT)) == {"id": "a/b c", "name": 'say "hi"\n'}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{{after.id", "unbalanced"),
        ("{{}}", "empty placeholder"),
        ("{{#each after}}x{{/each}}", "only {{name}} and {{json name}}"),
        ("{{row.id}}", "unknown name 'row'"),
        ("{{after..id}}", "cannot read"),
    ],
)
def test_a_malformed_template_is_refused_naming_the_placeholder(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("{", r"\{").replace("}", r"\}")):
        compile_template(text, Mode.BODY)


def _reaction(**calls: HttpCall) -> HttpReaction:
    return HttpReaction(
        id="hooks", base_url="http://127.0.0.1:9/api/", queries={"hot": HttpQueryCalls(**calls)}
    )


def test_a_template_naming_a_field_the_query_does_not_return_is_refused_in_one_line() -> None:
    spec = _reaction(added=HttpCall(url="/s/{{after.id}}", body='{"x": {{json after.temp}}}'))
    with pytest.raises(ConfigError) as raised:
        check_query(spec, "hot", ["id", "t"])
    message = str(raised.value)
    assert "\n" not in message
    assert message == (
        "reaction 'hooks', query 'hot', added: {{json after.temp}} names field 'temp', "
        "which the query does not return (its fields: id, t)"
    )


@pytest.mark.parametrize(
    ("kind", "template", "root"),
    [("added", "{{before.id}}", "before"), ("deleted", "{{after.id}}", "after")],
)
def test_a_row_the_change_kind_has_not_is_refused(kind: str, template: str, root: str) -> None:
    spec = _reaction(**{kind: HttpCall(url="/" + template)})
    with pytest.raises(ConfigError, match=f"names a field of '{root}', which is null in {kind}"):
        check_query(spec, "hot", ["id"])


def test_calls_follow_the_kind_and_carry_the_idempotency_key() -> None:
    spec = _reaction(
        added=HttpCall(url="/s/{{after.id}}", method="PUT", body='{"t": {{json after.t}}}'),
        deleted=HttpCall(url="/s/{{before.id}}", method="DELETE"),
    )
    endpoint = HttpEndpoint(spec, None)
    diffs = (
        {"type": "ADD", "data": {"id": "1", "t": 71}},
        {"type": "UPDATE", "before": {"id": "2", "t": 72}, "after": {"id": "2", "t": 73}},
        {"type": "DELETE", "data": {"id": "3", "t": 74}},
    )
    calls = endpoint.calls(ResultEntry("1-0", "hot", 9, diffs=diffs))
    assert [call.key for call in calls] == ["hot:9:0", "hot:9:1", "hot:9:2"]
    assert calls[1].payload is None  # no `updated` call configured: nothing sent
    added, deleted = calls[0].payload, calls[2].payload
    assert isinstance(added, HttpRequest) and isinstance(deleted, HttpRequest)
    assert (added.method, added.url, added.body) == (
        "PUT",
        "http://127.0.0.1:9/api/s/1",
        b'{"t": 71}',
    )
    assert ("Idempotency-Key", "hot:9:0") in added.headers
    assert ("Content-Type", "application/json") in added.headers
    assert (deleted.method, deleted.url, deleted.body) == (
        "DELETE",
        "http://127.0.0.1:9/api/s/3",
        None,
    )


def test_a_query_given_without_kinds_posts_every_diff_as_json() -> None:
    spec = HttpReaction(id="hooks", base_url="http://h", queries={"hot": None})
    diff = {"type": "aggregation", "before": None, "after": {"zone": "a", "n": 1}}
    (call,) = HttpEndpoint(spec, None).calls(ResultEntry("1-0", "hot", 3, diffs=(diff,)))
    assert call.payload.url == "http://h/changes/hot"
    assert orjson.loads(call.payload.body) == {
        "queryId": "hot",
        "sequence": 3,
        "kind": "updated",
        "before": None,
        "after": {"zone": "a", "n": 1},
    }


def test_the_token_comes_from_env_or_file_and_a_bad_one_is_one_line(tmp_path: Any) -> None:
    from_env = HttpReaction(id="h", base_url="http://h", queries={"q": None}, token_env="TOK")
    assert resolve_token(from_env, {"TOK": " s3cret\n"}).reveal() == "s3cret"  # type: ignore[union-attr]
    assert "s3cret" not in repr(resolve_token(from_env, {"TOK": "s3cret"}))
    with pytest.raises(ConfigError, match=r"^reaction 'h': token_env TOK is not set \(or empty\)$"):
        resolve_token(from_env, {})
    missing = tmp_path / "missing"
    empty = tmp_path / "empty"
    empty.write_text("\n")
    for path, message in [
        (missing, "does not exist"),
        (empty, "is empty"),
        (tmp_path, "cannot be read"),
    ]:
        spec = HttpReaction(id="h", base_url="http://h", queries={"q": None}, token_file=str(path))
        with pytest.raises(ConfigError, match=f"^reaction 'h': token_file {path} {message}"):
            resolve_token(spec)
