"""One way across the Python/Rust boundary: each native call takes its data and one dict
of options, read in one place of the binding, which refuses what it does not know; the
stubs (``_native.pyi``) name exactly what the module has, with the same parameters."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import merge_core as mc
import pyarrow as pa
import pytest
from merge_core import _native
from merge_core.inputs import sort_options

STUBS = Path(mc.__file__).with_name("_native.pyi")


def stub_tree() -> ast.Module:
    return ast.parse(STUBS.read_text())


def stubbed_functions() -> dict[str, list[str]]:
    return {
        node.name: [a.arg for a in node.args.args] for node in stub_tree().body if isinstance(node, ast.FunctionDef)
    }


def stubbed_classes() -> set[str]:
    return {node.name for node in stub_tree().body if isinstance(node, ast.ClassDef)}


def test_the_stubs_name_what_the_module_has():
    public = {name for name in dir(_native) if not name.startswith("__")}
    typed_dicts = {"MergeOptions", "SortOptions", "ReadOptions"}  # types only, no runtime object
    assert public == (set(stubbed_functions()) | stubbed_classes()) - typed_dicts


@pytest.mark.parametrize("name", sorted(stubbed_functions()))
def test_each_function_takes_the_parameters_its_stub_names(name):
    signature = inspect.signature(getattr(_native, name))
    assert list(signature.parameters) == stubbed_functions()[name]


def options_for_sort(**extra) -> dict:
    return {**sort_options("k", None, None, None, "64MiB", None, "lz4", 16, None, 1024), **extra}


def merge_options(**extra) -> dict:
    options = {
        "key": ["k"],
        "sequence": [],
        "descending": False,
        "row_kind": None,
        "merge": {"function": "deduplicate"},
        "algorithm": "loser-tree",
        "batch_size": 1024,
        "threads": 1,
    }
    return {**options, **extra}


DATA = pa.table({"k": [1, 2], "v": ["a", "b"]})


def test_the_options_as_built_are_taken():
    assert _native.merge([DATA], merge_options()).read_all().equals(DATA)
    assert _native.sort(DATA, options_for_sort()).read_all().equals(DATA)
    assert _native.SortBuffer(DATA.schema, options_for_sort(partial=True)).rows_written == 0


@pytest.mark.parametrize(
    ("call", "what"),
    [
        (lambda: _native.merge([DATA], merge_options(batch_rows=10)), "merge has no option 'batch_rows'"),
        (lambda: _native.sort(DATA, options_for_sort(memory=1)), "sort has no option 'memory'"),
        (lambda: _native.SortBuffer(DATA.schema, options_for_sort(partal=True)), "sort has no option 'partal'"),
        (lambda: _native.read_paimon(DATA.schema, [], {"key": ["k"], "thread": 1}), "read_paimon has no option"),
        (lambda: _native.merge([DATA], {k: v for k, v in merge_options().items() if k != "key"}), "lack 'key'"),
        (lambda: _native.merge([DATA], merge_options(batch_size="many")), "option 'batch_size'"),
    ],
    ids=["merge", "sort", "sort-buffer", "read", "missing", "wrong-type"],
)
def test_an_option_the_call_does_not_know_is_refused_by_name(call, what):
    with pytest.raises(ValueError, match=what):
        call()


def test_a_planned_file_checks_its_deleted_positions():
    assert _native.PlannedFile("f.parquet", ["k", None], (3).to_bytes(8, "little"))
    with pytest.raises(ValueError, match="little-endian u64s"):
        _native.PlannedFile("f.parquet", ["k"], b"\x01\x02\x03")
