"""docs/conformance.md, made from what the engines do.

``python -m tests.differential.conformance_doc`` writes it.

Every column is computed, none typed in:

- language features (tests/differential/drasi_registry.py ``FEATURES``): each sample query
  runs through drasi-lib over a small graph (it runs, Drasi refuses it when added, or the query
  stops on an error or a panic) and is added to drasi_ray's engine (accepted or refused);
- GQL's constructs (tests/differential/gql_registry.py ``GQL_FEATURES``) likewise, with
  ``language="gql"``, and GQL's functions (``DRASI_GQL_FUNCTIONS``) by drasi_ray's GQL front
  end (:data:`drasi_ray.query.gql.FUNCTIONS`), differential-tested when a query of the GQL
  catalogue (tests/differential/catalogue_gql.py) uses them;
- functions (``DRASI_FUNCTIONS``): drasi_ray supports one when its function registry
  (``drasi_ray.query.functions.FUNCTIONS``, the aggregates, the future and stateful functions of
  ``drasi_ray.query.future_functions``) has it, so a function another branch adds shows up
  when it lands; the functions drasi_ray has and Drasi lacks are listed apart;
- differential-tested: a catalogue query (tests/differential/catalogue.py) calls the
  function or uses the feature;
- the deviations and refusals: tests/differential/known.py, whose test runs each through both;
  those other tests pin (tests/differential/pinned.py); the scalar function cases where Drasi
  differs (tests/query/drasi_function_cases.py).

tests/differential/test_conformance_doc.py fails when the file differs from what this makes.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable, Sequence
from importlib.metadata import version
from pathlib import Path

from drasi_ray.model.errors import QueryError
from drasi_ray.model.query_specs import QueryLanguage
from drasi_ray.query import ast
from drasi_ray.query.engine import ContinuousQuery
from drasi_ray.query.expressions import walk
from drasi_ray.query.functions import AGGREGATES, FUNCTIONS
from drasi_ray.query.future_functions import SPECS as FUTURE_FUNCTIONS
from drasi_ray.query.gql import FUNCTIONS as GQL_FUNCTIONS
from drasi_ray.query.parser import parse_query
from tests.differential.catalogue import CATALOGUE
from tests.differential.catalogue_gql import GQL_CATALOGUE, TWINS
from tests.differential.drasi_registry import DRASI_FUNCTIONS, FEATURES, Feature
from tests.differential.gql_registry import DRASI_GQL_FUNCTIONS, GQL_FEATURES, GqlFeature
from tests.differential.known import KNOWN, Known
from tests.differential.pinned import PINNED
from tests.differential.probes import changes
from tests.differential.test_differential import CHANGES, SEEDS
from tests.differential.test_gql_differential import CHANGES as GQL_CHANGES
from tests.differential.test_gql_differential import SEEDS as GQL_SEEDS
from tests.oracle.cases import run_jobs
from tests.oracle.model import Case, CaseRun, QueryRun, QuerySpec
from tests.query.drasi_function_cases import ERROR, REFUSED, SCALAR_CASES, SILENT

DOC = Path(__file__).resolve().parents[2] / "docs" / "conformance.md"

SAMPLE_GRAPH = changes(
    ("insert", "a1", "A", {"x": 1, "y": 2, "s": "xa", "l": [1, 2], "f": False, "g": "g"}),
    ("insert", "b1", "B", {"x": 2}),
    ("insert", "c1", "C", {"x": 3}),
    ("insert", "r1", "R", {"w": 1}, "a1", "b1"),
    ("insert", "s1", "S", {}, "b1", "c1"),
)
"""What each feature's sample runs over in drasi-lib."""


# --------------------------------------------------------------------------- facts


def catalogue_queries() -> list[ast.Query]:
    return [parse_query(query.text) for query in CATALOGUE]


def _called(query: ast.Query) -> set[str]:
    names: set[str] = set()
    for part in query.parts:
        exprs = [item.expression for item in part.projection.items]
        exprs += [clause.where for clause in part.matches if clause.where is not None]
        if part.projection.where is not None:
            exprs.append(part.projection.where)
        for expr in exprs:
            for node in walk(expr):
                if isinstance(node, ast.FunctionCall):
                    names.add(node.name.lower())
                elif isinstance(node, ast.Reduce):
                    names.add("reduce")
    return names


def tested_functions(queries: Iterable[ast.Query]) -> set[str]:
    """Lower-case names of the functions the catalogue calls."""
    return set().union(*(_called(query) for query in queries))


def drasi_ray_has(name: str) -> bool:
    key = name.lower()
    return key in FUNCTIONS or key in AGGREGATES or key in FUTURE_FUNCTIONS or key == "reduce"


def drasi_ray_accepts(feature: Feature | GqlFeature, language: QueryLanguage) -> str:
    try:
        ContinuousQuery("sample", feature.sample, dict(feature.parameters), language=language)
    except QueryError:
        return "refused"
    return "yes"


def drasi_verdict(run: QueryRun) -> str:
    failure = run.failure
    if failure is None:
        return "yes"
    if failure.startswith("refused"):
        return "refused"
    if "did not finish" in failure:
        return "panics"
    return "fails"


def run_samples() -> tuple[dict[str, str], dict[str, str]]:
    """Drasi's verdict on every feature's sample, by feature name: Cypher's, GQL's."""
    cypher = tuple(QuerySpec(f"f{number}", f.sample) for number, f in enumerate(FEATURES))
    gql = tuple(
        QuerySpec(f"g{number}", f.sample, language="gql") for number, f in enumerate(GQL_FEATURES)
    )
    jobs = [(Case("features", SAMPLE_GRAPH), cypher), (Case("gql", SAMPLE_GRAPH), gql)]
    runs: dict[str, CaseRun] = run_jobs(jobs)
    return (
        {
            feature.name: drasi_verdict(runs["features"].queries[f"f{number}"])
            for number, feature in enumerate(FEATURES)
        },
        {
            feature.name: drasi_verdict(runs["gql"].queries[f"g{number}"])
            for number, feature in enumerate(GQL_FEATURES)
        },
    )


# --------------------------------------------------------------------------- the document


def _table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return lines


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def _feature_rows(verdicts: dict[str, str], queries: list[ast.Query]) -> list[list[str]]:
    return [
        [
            feature.name,
            verdicts[feature.name],
            drasi_ray_accepts(feature, QueryLanguage.CYPHER),
            _yes(any(feature.used_by(query) for query in queries)),
        ]
        for feature in FEATURES
    ]


def _gql_feature_rows(verdicts: dict[str, str]) -> list[list[str]]:
    return [
        [
            feature.name,
            verdicts[feature.name],
            drasi_ray_accepts(feature, QueryLanguage.GQL),
            _yes(any(feature.used_by(query.text) for query in GQL_CATALOGUE)),
        ]
        for feature in GQL_FEATURES
    ]


def gql_calls(name: str) -> bool:
    """Whether a GQL catalogue query calls GQL function ``name``."""
    call = re.compile(rf"(?<![\w.]){re.escape(name)}\s*\(", re.I)
    return any(call.search(query.text) for query in GQL_CATALOGUE)


def _gql_function_rows() -> list[list[str]]:
    rows = []
    for function in DRASI_GQL_FUNCTIONS:
        drasi = f"yes ({function.note})" if function.note else "yes"
        known = function.name.lower() in GQL_FUNCTIONS or function.name in ("cast", "reduce")
        rows.append(
            [
                f"`{function.name}`",
                function.category,
                drasi,
                "yes" if known else "no (refused when added)",
                _yes(gql_calls(function.name)),
            ]
        )
    return rows


def _function_rows(tested: set[str]) -> list[list[str]]:
    rows = []
    for function in DRASI_FUNCTIONS:
        drasi = f"yes ({function.note})" if function.note else "yes"
        ours = "yes" if drasi_ray_has(function.name) else "no (refused when added)"
        rows.append(
            [
                f"`{function.name}`",
                function.category,
                drasi,
                ours,
                _yes(function.name.lower() in tested),
            ]
        )
    return rows


def _extra_rows() -> list[list[str]]:
    drasis = {function.name.lower() for function in DRASI_FUNCTIONS}
    extra = sorted(name for name in FUNCTIONS if name not in drasis)
    return [[f"`{name}`", "no (unknown function: the query stops)", "yes"] for name in extra]


def _known_rows(kind: str, language: str = "cypher") -> list[list[str]]:
    chosen: list[Known] = [
        known for known in KNOWN if known.kind == kind and known.probe.language == language
    ]
    test = "tests/differential/test_known.py"
    return [
        [
            f"`{known.id}`",
            f"`{known.probe.query}`",
            known.drasi_does,
            known.drasi_ray_does,
            f"{test}::{known.id}",
        ]
        for known in chosen
    ]


def _pinned_rows() -> list[list[str]]:
    return [
        [f"`{pinned.id}`", pinned.drasi_does, pinned.drasi_ray_does, pinned.test]
        for pinned in PINNED
    ]


def _outcome_text(outcome: object) -> str:
    if outcome is ERROR:
        return "the query stops (error)"
    if outcome is SILENT:
        return "panics (the query stops answering)"
    if outcome is REFUSED:
        return "the row is refused (error)"
    return f"`{json.dumps(outcome)}`"


def _function_case_rows() -> list[list[str]]:
    return [
        [
            f"`{case.expression}`",
            _outcome_text(case.drasi_outcome),
            _outcome_text(case.expected),
            case.note,
        ]
        for case in SCALAR_CASES
        if case.differs
    ]


HEADER = """# Conformance with Drasi

What drasi_ray supports of Drasi's continuous Cypher (and, at the end, of its GQL), and where it
differs, checked against Drasi's own engine: drasi-lib {lib} (drasi-core through its Python
binding), run in process by the differential tests (tests/differential). **Generated** by
`python -m tests.differential.conformance_doc`; tests/differential/test_conformance_doc.py
fails when this file is out of date. Do not edit it by hand.

How the columns are made: *Drasi* is what drasi-lib does with a sample query over a small
graph (`yes`: it runs; `refused`: an error when the query is added; `fails`: the query stops on
an error, its status leaves Running; `panics`: it stops answering); *drasi_ray* is whether
drasi_ray's engine accepts the query (a refused query gets an error with line and column when
added); *differential-tested* says whether a query of the differential catalogue
(tests/differential/catalogue.py, {queries} queries) uses it: those run against drasi-lib on
every change of random graphs, {seeds} seeds x {changes} changes in CI
(tests/differential/test_differential.py) and at length with `python -m bench.differential`,
diffs compared per change as multisets and final result sets compared.
"""


GQL_INTRO = """What drasi_ray supports of Drasi's GQL (a query's `queryLanguage: GQL`, drasi-lib's
`language="gql"`; docs/semantics.md §3 says how a GQL query is built into parts), checked the
same way: each construct's sample runs through drasi-lib with `language="gql"` and is added
to drasi_ray as GQL; *differential-tested* says whether a query of the GQL catalogue
(tests/differential/catalogue_gql.py, {queries} queries, {twins} of them with a Cypher twin
whose output must be the GQL query's) uses it: {seeds} seeds x {changes} changes in CI
(tests/differential/test_gql_differential.py) and at length with
`python -m bench.differential --gql`.
"""


def _gql_section(verdicts: dict[str, str]) -> list[str]:
    intro = GQL_INTRO.format(
        queries=len(GQL_CATALOGUE), twins=len(TWINS), seeds=len(GQL_SEEDS), changes=GQL_CHANGES
    )
    return [
        "## GQL",
        "",
        intro,
        "### Constructs",
        "",
        *_table(
            ("construct", "Drasi", "drasi_ray", "differential-tested"), _gql_feature_rows(verdicts)
        ),
        "",
        "### Functions",
        "",
        "GQL has a function set of its own (drasi-core's `functions-gql`, and the future and past",
        "functions core registers for both languages). A Cypher name GQL lacks (`toUpper`,",
        "`elementId`, `datetime`, `collect`) is refused when added, with GQL's name where there is",
        "one; Drasi accepts the query and stops at its first row.",
        "",
        *_table(
            ("function", "category", "Drasi", "drasi_ray", "differential-tested"),
            _gql_function_rows(),
        ),
        "",
        "### Deviations",
        "",
        "The Cypher deviations above hold for GQL too (the expressions are the same); these are",
        "GQL's own, or shown in GQL:",
        "",
        *_table(("id", "query", "Drasi", "drasi_ray", "test"), _known_rows("deviation", "gql")),
        "",
        "### Where Drasi fails",
        "",
        *_table(("id", "query", "Drasi", "drasi_ray", "test"), _known_rows("refusal", "gql")),
        "",
    ]


def build() -> str:
    """The document's text."""
    queries = catalogue_queries()
    tested = tested_functions(queries)
    verdicts, gql_verdicts = run_samples()
    lines = [
        HEADER.format(
            lib=version("drasi-lib"), queries=len(CATALOGUE), seeds=len(SEEDS), changes=CHANGES
        ),
        "## Clauses and expressions",
        "",
        *_table(
            ("feature", "Drasi", "drasi_ray", "differential-tested"),
            _feature_rows(verdicts, queries),
        ),
        "",
        "## Functions",
        "",
        "Every function Drasi registers (drasi-core's Cypher function set, and the future and",
        "past functions core registers itself).",
        "",
        *_table(
            ("function", "category", "Drasi", "drasi_ray", "differential-tested"),
            _function_rows(tested),
        ),
        "",
        "## Functions only drasi_ray has",
        "",
        *_table(("function", "Drasi", "drasi_ray"), _extra_rows()),
        "",
        "## Deviations: where Drasi is wrong and drasi_ray keeps openCypher's meaning",
        "",
        "A user porting a query expects Drasi's results, and gets them, except here: Drasi's",
        "answer is plainly wrong, and drasi_ray gives openCypher's (or a result set that holds",
        "the query's rows). Each test runs the query through both engines and checks both",
        "outputs, so a drasi-lib release that changes either fails it.",
        "",
        *_table(("id", "query", "Drasi", "drasi_ray", "test"), _known_rows("deviation")),
        "",
        "Pinned by the tests of the features they belong to, each running both engines:",
        "",
        *_table(("id", "Drasi", "drasi_ray", "test"), _pinned_rows()),
        "",
        "Scalar function cases (tests/query/drasi_function_cases.py; drasi_ray's outcome checked",
        "by tests/query/test_function_cases.py, Drasi's by",
        "tests/query/test_function_cases_oracle.py):",
        "",
        *_table(("expression", "Drasi", "drasi_ray", "why"), _function_case_rows()),
        "",
        "## Where Drasi refuses, fails or panics",
        "",
        "drasi_ray keeps openCypher's meaning there, or refuses the query too when it does not",
        "support the feature. The tests check both outcomes.",
        "",
        *_table(("id", "query", "Drasi", "drasi_ray", "test"), _known_rows("refusal")),
        "",
        *_gql_section(gql_verdicts),
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    DOC.parent.mkdir(parents=True, exist_ok=True)
    DOC.write_text(build(), encoding="utf-8")
    print(f"wrote {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
