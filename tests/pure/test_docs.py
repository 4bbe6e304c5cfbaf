"""docs/ stays true to the code: generated parts current, examples valid, citations resolvable.

- docs/configuration.md's reference is what :mod:`drasi_ray.ops.reference` makes of the models,
  and names every builder method; its YAML example validates and its Python example runs.
- docs/architecture.md lists every key of the Redis key schema (drasi_ray/model/keys.py).
- Every ``docs/<page>.md §N`` cited in the code, tests or benchmarks names an existing page and
  section; nothing cites the retired SEMANTICS.md or bench/RESULTS.md.
- Every relative link of README.md and docs/ points to a file that exists.
- Every dotted ``drasi_ray.<module>.<name>`` in a docstring, comment or string of the code,
  tests, benchmarks and examples, in docs/ and in README.md resolves: a module, an attribute of one
  (a class, function, constant, method or field), or a logger the package creates; every
  repository path they cite (``drasi_ray/…/x.py``, ``tests/…``) exists.
- docs/architecture.md's "Follow one change" names functions defined where it says, and the
  package crossings it states are what its hops make.
"""

from __future__ import annotations

import importlib
import io
import itertools
import re
import tokenize
from pathlib import Path
from types import ModuleType

import yaml

from drasi_ray.model import keys
from drasi_ray.model.config import AppConfig
from drasi_ray.model.query_specs import MIDDLEWARE_KINDS
from drasi_ray.ops import reference
from drasi_ray.query import functions

ROOT = Path(__file__).resolve().parent.parent.parent
DOCS = ROOT / "docs"
CITING = ("drasi_ray", "tests", "bench", "examples")
DOTTED = re.compile(r"(?<![\w./-])drasi_ray(?:\.[A-Za-z_]\w*)+")
LOGGER = re.compile(r"getLogger\(f?\"(drasi_ray(?:\.\w+)*)")
CITED_PATH = re.compile(
    r"(?<![\w/.-])(?:drasi_ray|tests|bench|examples|docs)/[\w/.-]*\w\.(?:py|md|yaml|lark)"
)


def fenced(text: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.S)


def sources_citing() -> list[tuple[Path, str]]:
    files = [
        path
        for folder in CITING
        for path in (ROOT / folder).rglob("*")
        if path.suffix in (".py", ".lark", ".md", ".yaml") and "archive" not in path.parts
    ]
    return [(path, path.read_text(encoding="utf-8")) for path in files]


def test_the_configuration_reference_is_generated_from_the_models() -> None:
    page = (DOCS / "configuration.md").read_text(encoding="utf-8")
    assert reference.splice(page, reference.render()) == page, (
        "docs/configuration.md is stale: run `python -m drasi_ray.ops.reference --write`"
    )


def test_the_reference_names_every_builder_method_and_middleware_kind() -> None:
    page = (DOCS / "configuration.md").read_text(encoding="utf-8")
    missing = [name for name in reference.builder_methods() if name not in page]
    assert not missing, f"builder methods the reference does not name: {missing}"
    assert set(reference.MIDDLEWARE_CONFIGS) == set(MIDDLEWARE_KINDS)


def test_every_setting_of_the_reference_says_what_it_means() -> None:
    """Middleware configs aside (Drasi's shapes), every field has a description."""
    missing = [
        f"{section.model.__name__}.{name}"
        for section in reference.sections()
        for name, info in section.model.model_fields.items()
        if name not in section.skip and not info.description
    ]
    assert not missing, f"fields without a description (the reference's meaning): {missing}"


def test_the_configuration_examples_are_valid() -> None:
    page = (DOCS / "configuration.md").read_text(encoding="utf-8")
    (app_yaml,) = fenced(page, "yaml")
    AppConfig.from_mapping(yaml.safe_load(app_yaml), origin="docs/configuration.md")
    (program,) = fenced(page, "python")
    namespace: dict[str, object] = {}
    exec(compile(program, "docs/configuration.md", "exec"), namespace)  # builds, starts nothing
    assert namespace["app"].query_ids == ["hot-sensors"]  # type: ignore[attr-defined]


def test_the_semantics_page_names_every_function_of_the_registry() -> None:
    """docs/semantics.md §3 lists what the parser accepts: every scalar function and aggregate."""
    page = (DOCS / "semantics.md").read_text(encoding="utf-8").lower()
    named = set(re.findall(r"`([a-z_][a-z0-9_.]*)`", page))
    missing = sorted((set(functions.FUNCTIONS) | set(functions.AGGREGATES)) - named)
    assert not missing, (
        f"functions the parser accepts that docs/semantics.md does not list: {missing}"
    )


def test_the_architecture_page_lists_every_redis_key() -> None:
    schema = keys.__doc__ or ""
    patterns = re.findall(r"^``([^`]+)``", schema, flags=re.M)
    assert len(patterns) >= 8, patterns
    page = (DOCS / "architecture.md").read_text(encoding="utf-8")
    missing = [pattern for pattern in patterns if f"`{pattern}`" not in page]
    assert not missing, f"keys of drasi_ray/model/keys.py missing from architecture.md: {missing}"


def test_the_architecture_page_names_every_module() -> None:
    """The layout table names every module of every package (a new module needs its line)."""
    page = (DOCS / "architecture.md").read_text(encoding="utf-8")
    layout = page[page.index("| layer | what | modules |") :]
    package = ROOT / "drasi_ray"
    modules = {
        path.stem if path.suffix == ".py" else path.name
        for path in package.glob("*/*")
        if path.suffix in (".py", ".lark") and not path.name.startswith("_")
    }
    modules |= {path.name for path in package.glob("*/*/") if (path / "__init__.py").exists()}
    missing = sorted(name for name in modules if f"`{name}" not in layout)
    assert not missing, f"modules the layout table of docs/architecture.md does not name: {missing}"


def test_citations_of_docs_pages_resolve() -> None:
    sections = {
        page.name: set(re.findall(r"^## (\d+)\.", page.read_text(encoding="utf-8"), flags=re.M))
        for page in DOCS.glob("*.md")
    }
    for path, text in sources_citing():
        for page, number in re.findall(r"docs/([a-z_-]+\.md)(?: §(\d+))?", text):
            assert page in sections, f"{path}: cites docs/{page}, which does not exist"
            if number:
                assert number in sections[page], f"{path}: cites docs/{page} §{number}"


def test_nothing_cites_the_retired_documents() -> None:
    for path, text in sources_citing():
        if path == Path(__file__).resolve():
            continue
        assert "SEMANTICS.md" not in text, f"{path} cites SEMANTICS.md: cite docs/semantics.md"
        assert "bench/RESULTS.md" not in text, f"{path} cites bench/RESULTS.md"


def test_relative_links_point_to_existing_files() -> None:
    pages = [ROOT / "README.md", *DOCS.glob("*.md")]
    for page in pages:
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            assert (page.parent / target).exists(), f"{page.name}: broken link {target}"


def prose_of(path: Path, text: str) -> str:
    """Where a file can name things: a Python file's strings and comments (a variable called
    ``drasi_ray`` in code is not a citation), any other file whole."""
    if path.suffix != ".py":
        return text
    tokens = tokenize.generate_tokens(io.StringIO(text).readline)
    kinds = {tokenize.STRING, tokenize.COMMENT, getattr(tokenize, "FSTRING_MIDDLE", 0)}  # 3.12+
    return "\n".join(token.string for token in tokens if token.type in kinds)


def documents() -> list[tuple[Path, str]]:
    """The code, tests, benchmarks and examples, docs/ and README.md, as (path, text)."""
    pages = [ROOT / "README.md", *DOCS.glob("*.md")]
    return [*sources_citing(), *((page, page.read_text(encoding="utf-8")) for page in pages)]


def package_loggers() -> set[str]:
    """The names the package's modules give ``logging.getLogger`` (a prefix for f-strings)."""
    return {
        name
        for path in (ROOT / "drasi_ray").rglob("*.py")
        for name in LOGGER.findall(path.read_text(encoding="utf-8"))
    }


def resolves(dotted: str) -> bool:
    """Whether ``dotted`` is a module, or a chain of attributes of the longest module prefix;
    a last part may also be a declared field (pydantic, dataclass, msgspec, annotations)."""
    parts = dotted.split(".")
    for split in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:split]))
        except ModuleNotFoundError:
            continue
        return _attributes_resolve(found, parts[split:])
    return False


def _attributes_resolve(found: object, names: list[str]) -> bool:
    for position, name in enumerate(names):
        if hasattr(found, name):
            found = getattr(found, name)
            continue
        last = position == len(names) - 1
        return last and not isinstance(found, ModuleType) and name in _declared_fields(found)
    return True


def _declared_fields(owner: object) -> set[str]:
    return {
        *getattr(owner, "model_fields", {}),
        *getattr(owner, "__dataclass_fields__", {}),
        *getattr(owner, "__struct_fields__", ()),
        *getattr(owner, "__annotations__", {}),
    }


def test_every_dotted_name_of_the_package_resolves() -> None:
    loggers = package_loggers()
    stale: dict[str, set[str]] = {}
    for path, text in documents():
        for name in set(DOTTED.findall(prose_of(path, text))):
            if name not in loggers and not resolves(name):
                stale.setdefault(name, set()).add(str(path.relative_to(ROOT)))
    assert not stale, f"dotted names that are no module, attribute or logger: {stale}"


def test_every_cited_repository_path_exists() -> None:
    this = Path(__file__).resolve()
    missing = {
        (str(path.relative_to(ROOT)), cited)
        for path, text in documents()
        if path != this
        for cited in CITED_PATH.findall(text)
        if not (ROOT / cited).exists()
    }
    assert not missing, f"paths cited that do not exist: {sorted(missing)}"


HOP = re.compile(r"^\d+\. `(drasi_ray/[\w/]+\.py):([\w.]+)`", flags=re.M)
CROSSINGS = re.compile(r"crosses (\d+) package boundaries")


def test_the_hops_of_one_change_resolve_and_their_crossings_are_counted() -> None:
    """docs/architecture.md, "Follow one change": every ``file:function`` hop names a function
    (or method) defined in that file, and the number of package crossings the page states is
    the number of consecutive hops in different packages of ``drasi_ray/``."""
    page = (DOCS / "architecture.md").read_text(encoding="utf-8")
    section = page[page.index("## Follow one change") :]
    section = section[: section.index("\n## ", 1)]
    hops = HOP.findall(section)
    assert len(hops) >= 20, hops
    for path, name in hops:
        module = importlib.import_module(path.removesuffix(".py").replace("/", "."))
        found = _attributes_resolve(module, name.split("."))
        assert found, f"architecture.md: {path}:{name} is not defined there"
        assert _defined_in(module, name), f"architecture.md: {path}:{name} is imported there"
    packages = [Path(path).parts[1] for path, _ in hops]
    crossings = sum(1 for a, b in itertools.pairwise(packages) if a != b)
    (stated,) = CROSSINGS.findall(section)
    assert int(stated) == crossings, f"the page says {stated} crossings, the hops make {crossings}"


def _defined_in(module: ModuleType, name: str) -> bool:
    """Whether the first part of ``name`` is defined in ``module`` (not imported into it)."""
    owner = getattr(module, name.split(".")[0])
    return getattr(owner, "__module__", module.__name__) == module.__name__
