"""The registry a seam is chosen from by name: lazy built-ins, names added at run time, one error for the rest."""

from __future__ import annotations

import json

import pytest

from kernelpro.registry import Registry, UnknownName


def test_a_registry_imports_its_built_ins_on_first_use_and_guards_its_names():
    table = Registry("codec", {"json": "json:dumps"}, reserved=("auto",))
    assert table.names() == ("json",) and table.choices() == ("auto", "json") and "json" in table
    assert table.build("json", {"a": 1}) == '{"a": 1}' and table["json"] is json.dumps
    table.register("upper", str.upper)
    assert table.build("upper", "x") == "X" and list(table) == ["json", "upper"]
    with pytest.raises(ValueError, match="registered already"):
        table.register("upper", str.lower)
    table.register("upper", str.lower, replace=True)
    assert table.build("upper", "X") == "x"
    with pytest.raises(ValueError, match="cannot name a codec"):
        table.register("auto", str)
    with pytest.raises(UnknownName, match="unknown codec 'xml'; choose one of auto, json, upper"):
        table.factory("xml")
    with pytest.raises(KeyError):
        table["xml"]
    assert table.refusal("xml", "--codec") == "--codec must be one of auto, json, upper, not 'xml'"
    assert table.refusal("auto", "--codec") is None and table.refusal(None, "--codec") is None
