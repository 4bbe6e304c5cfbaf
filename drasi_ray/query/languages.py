"""A query's text in its language -> :class:`drasi_ray.query.ast.Query`.

Cypher (:mod:`drasi_ray.query.parser`) and GQL (:mod:`drasi_ray.query.gql`) build the same
AST, so everything past parsing (the engine, routing by label, joins, middleware) is the same
for both.
"""

from __future__ import annotations

from drasi_ray.model.query_specs import QueryLanguage
from drasi_ray.query import ast
from drasi_ray.query.gql import parse_gql
from drasi_ray.query.parser import parse_query


def parse(text: str, language: QueryLanguage = QueryLanguage.CYPHER) -> ast.Query:
    """Parse ``text`` as a query in ``language`` (errors as :func:`parse_query` raises them)."""
    if language is QueryLanguage.GQL:
        return parse_gql(text)
    return parse_query(text)
