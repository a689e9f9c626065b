"""The real catalogue is valid, and malformed catalogues are refused."""

import copy

import pytest

from colossus_conformance import catalogue
from colossus_conformance.catalogue import CatalogueError, parse_document

from .conftest import SUITE


def test_real_catalogue_loads_and_every_case_cites_requirements():
    cases = catalogue.load_catalogue(SUITE / "cases")
    assert len(cases) > 40
    for case in cases:
        assert case.requirements
        assert case.level in ("REQUIRED", "RECOMMENDED")


def test_real_catalogue_covers_headline_groups():
    groups = {c.group for c in catalogue.load_catalogue(SUITE / "cases")}
    assert {"watch-dedup", "gap-failure", "idempotency", "pin-checks"} <= groups


GOOD = {
    "group": "g",
    "description": "d",
    "cases": [
        {
            "id": "g.one",
            "title": "t",
            "requirements": ["S1"],
            "level": "REQUIRED",
            "steps": [{"id": "c", "op": "connect", "args": {"conn": "main"}}],
            "assert": [{"path": "steps.c.error", "exists": False}],
        }
    ],
}


def test_minimal_document_is_accepted(validator):
    [case] = parse_document(GOOD, validator, "x.yaml")
    assert case.worker == "daemon"
    assert case.connections == ({"name": "main"},)


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda d: d["cases"][0].pop("requirements"), "requirements"),
        (lambda d: d["cases"][0].update(level="OPTIONAL"), "OPTIONAL"),
        (lambda d: d["cases"][0].update(requirements=["X9"]), "X9"),
        (lambda d: d["cases"][0].update(id="NoDots"), "NoDots"),
        (lambda d: d["cases"][0].update(surprise=1), "surprise"),
        (lambda d: d["cases"][0]["assert"][0].update(path="steps.nope.error"), "unknown step"),
        (lambda d: d["cases"][0]["steps"].append({"id": "c", "op": "connect"}), "duplicate step"),
        (lambda d: d["cases"][0]["steps"][0]["args"].update(conn="ghost"), "unknown connection"),
        (lambda d: d["cases"][0].update(requires_features=["x"]), "REQUIRED case cannot"),
        (lambda d: d["cases"][0]["assert"].__setitem__(0, {"path": "steps.c"}), "schema"),
    ],
)
def test_malformed_documents_are_refused(validator, mutate, message):
    document = copy.deepcopy(GOOD)
    mutate(document)
    with pytest.raises(CatalogueError) as err:
        parse_document(document, validator, "x.yaml")
    assert message in str(err.value) or "schema violation" in str(err.value)


def test_duplicate_ids_across_files_are_refused(tmp_path):
    import json

    import yaml

    (tmp_path / "schema.json").write_text((SUITE / "cases" / "schema.json").read_text())
    for name in ("a.yaml", "b.yaml"):
        (tmp_path / name).write_text(yaml.safe_dump(json.loads(json.dumps(GOOD))))
    with pytest.raises(CatalogueError, match="already defined"):
        catalogue.load_catalogue(tmp_path)


def test_selection_by_glob_and_prefix(validator):
    from .conftest import make_cases

    cases = make_cases(validator, ["selftest.a.one", "selftest.a.two", "selftest.b"])
    assert [c.id for c in catalogue.select(cases, ["selftest.a"])] == ["selftest.a.one", "selftest.a.two"]
    assert [c.id for c in catalogue.select(cases, ["*.two"])] == ["selftest.a.two"]
    assert catalogue.select(cases, ["selftest.a.on"]) == []
    assert len(catalogue.select(cases, [])) == 3
