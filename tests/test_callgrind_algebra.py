"""FunctionCounts / CallgrindStats semantics, checked against torch's classes on the same data."""

import pytest
from torch.utils.benchmark.utils.common import TaskSpec as TorchTaskSpec
from torch.utils.benchmark.utils.valgrind_wrapper import timer_interface as torch_cg

import torchbench_core as tb
from torchbench_core.callgrind import CallgrindStats, FunctionCount, FunctionCounts, _parse_annotate

ROWS_A = [(900, "/tmp/build/Python/ceval.c:_PyEval_EvalFrameDefault [/lib/libpython3.11.so]"),
          (400, "???:at::TensorIteratorBase::build(at::TensorIteratorConfig&) [/torch/lib/libtorch_cpu.so]"),
          (300, "/tmp/build/Objects/dictobject.c:unicodekeys_lookup_unicode [/lib/libpython3.11.so]"),
          (120, "/tmp/build/Objects/dictobject.c:lookdict_unicode [/lib/libpython3.10.so]"),
          (50, "./malloc/./malloc/malloc.c:_int_free [/usr/lib/libc.so.6]")]
ROWS_B = [(850, ROWS_A[0][1]), (410, ROWS_A[1][1]), (70, "new_function"), (50, ROWS_A[4][1])]


def both(rows, inclusive=False):
    ours = FunctionCounts(tuple(FunctionCount(c, f) for c, f in rows), inclusive)
    theirs = torch_cg.FunctionCounts(tuple(torch_cg.FunctionCount(c, f) for c, f in rows), inclusive)
    return ours, theirs


def same(ours, theirs):
    assert [tuple(x) for x in ours] == [tuple(x) for x in theirs]
    assert repr(ours).splitlines()[1:] == repr(theirs).splitlines()[1:]


def test_algebra_matches_torch():
    a, ta = both(ROWS_A)
    b, tb_ = both(ROWS_B)
    same(a + b, ta + tb_)
    same(a - b, ta - tb_)
    same(a * 0.5, ta * 0.5)
    same(a.transform(lambda fn: fn.split(":")[0]), ta.transform(lambda fn: fn.split(":")[0]))
    same(a.filter(lambda fn: "malloc" in fn), ta.filter(lambda fn: "malloc" in fn))
    assert a.sum() == ta.sum() == 1770
    assert a[0] == (900, ROWS_A[0][1]) and len(a[1:3]) == 2
    assert (a - a).sum() == 0 and len(a - a) == 0  # zero entries are dropped


def test_long_tables_are_truncated_like_torch():
    rows = [(1000 - i, f"fn_{i}") for i in range(30)]
    ours, theirs = both(rows)
    same(ours, theirs)
    assert "..." in repr(ours) and len(repr(ours).splitlines()) == 1 + 19 + 2


def test_denoise_knows_python_3_11_symbols():
    """torch's denoise drops only 'lookdict_unicode', which CPython 3.11 no longer has."""
    ours, theirs = both(ROWS_A)
    assert theirs.denoise().sum() == 1770 - 120
    assert ours.denoise().sum() == 1770 - 120 - 300
    assert not any("dictobject.c" in fn for _, fn in ours.denoise())


def test_inclusive_and_exclusive_do_not_mix():
    a, _ = both(ROWS_A)
    b, _ = both(ROWS_B, inclusive=True)
    with pytest.raises(ValueError, match="inclusive and exclusive"):
        a + b


def stats(stmt_rows, base_rows, spec=None):
    spec = spec or tb.TaskSpec("torch.add(x, x)", "x = torch.ones(4)", label="add")
    inc = lambda rows: FunctionCounts(tuple(FunctionCount(c, f) for c, f in rows), True)  # noqa: E731
    exc = lambda rows: FunctionCounts(tuple(FunctionCount(c, f) for c, f in rows), False)  # noqa: E731
    return CallgrindStats(spec, 100, False, inc(base_rows), exc(base_rows), inc(stmt_rows), exc(stmt_rows), None)


def test_baseline_can_be_subtracted():
    """torch collects the baseline but counts() never subtracts it."""
    s = stats(ROWS_A, [(30, "loop"), (5, "toggle")])
    assert s.counts() == 1770
    assert s.counts(subtract_baseline=True) == 1770 - 35
    assert s.counts(denoise=True, subtract_baseline=True) == 1770 - 420 - 35


def test_repr_matches_torch():
    ours = stats(ROWS_A, [(30, "loop")])
    spec = TorchTaskSpec("torch.add(x, x)", "x = torch.ones(4)", label="add")
    inc, exc = both(ROWS_A, True)[1], both(ROWS_A)[1]
    binc, bexc = both([(30, "loop")], True)[1], both([(30, "loop")])[1]
    theirs = torch_cg.CallgrindStats(spec, 100, False, binc, bexc, inc, exc, None)
    assert repr(ours).splitlines()[1:] != [] and "Instructions:" in repr(ours)
    # Equal apart from the object line and the denoised column, where we
    # also drop the 3.11 dict-lookup symbols.
    diff = [(o, t) for o, t in zip(repr(ours).splitlines()[1:], repr(theirs).splitlines()[1:]) if o != t]
    assert [o.split()[:2] for o, _ in diff] == [["Instructions:", "1770"]]


def test_as_standardized_strips_build_paths():
    s = stats(ROWS_A, []).as_standardized()
    names = [fn for _, fn in s.stats()]
    assert "Python/ceval.c:_PyEval_EvalFrameDefault" in names
    assert "Objects/dictobject.c:unicodekeys_lookup_unicode" in names
    assert not any("[" in fn or fn.startswith("/tmp") for fn in names)


def test_delta_diffs_exclusive_counts():
    d = stats(ROWS_B, []).delta(stats(ROWS_A, []))
    assert dict((fn, c) for c, fn in d)["new_function"] == 70
    assert d.sum() == sum(c for c, _ in ROWS_B) - 1770


def test_json_round_trip():
    s = stats(ROWS_A, [(30, "loop")])
    back = CallgrindStats.from_dict(s.to_dict())
    assert back.task_spec == s.task_spec and back.counts(subtract_baseline=True) == s.counts(subtract_baseline=True)
    assert list(back.stats(inclusive=True)) == list(s.stats(inclusive=True))


ANNOTATE = """\
--------------------------------------------------------------------------------
Profile data file 'callgrind.out.2' (creator: callgrind-3.19.0)
--------------------------------------------------------------------------------
Ir
--------------------------------------------------------------------------------
961,714  PROGRAM TOTALS

--------------------------------------------------------------------------------
Ir       file:function
--------------------------------------------------------------------------------
961,714  ./csu/../csu/libc-start.c:__libc_start_main@@GLIBC_2.34 [/usr/lib/x86_64-linux-gnu/libc.so.6]
961,714  /tmp/python-build/Python-3.11.7/Modules/main.c:Py_BytesMain [/lib/libpython3.11.so.1.0]
 43,298  ./malloc/./malloc/malloc.c:_int_free [/usr/lib/x86_64-linux-gnu/libc.so.6]
  2,500  ???:at::empty_cpu(c10::ArrayRef<long>) [/torch/lib/libtorch_cpu.so]
"""


def test_parser_skips_whole_program_frames():
    """From the second dump of a process on, frames below the counted region
    show the dump's total even in exclusive mode; torch skips them as well."""
    counts = _parse_annotate(ANNOTATE, inclusive=False)
    assert [c for c, _ in counts] == [43298, 2500]
    assert counts[1].function == "???:at::empty_cpu(c10::ArrayRef<long>) [/torch/lib/libtorch_cpu.so]"


def test_unexpected_annotate_output_is_an_error():
    with pytest.raises(tb.callgrind.CallgrindError, match="unexpected callgrind_annotate output"):
        _parse_annotate("callgrind_annotate: no such file", inclusive=False)


def test_missing_valgrind_says_how_to_install_it(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(OSError, match=r"Missing: valgrind, callgrind_annotate.*apt-get install valgrind"):
        tb.Timer("pass").collect_callgrind()


def test_globals_that_cannot_reach_the_worker_are_named():
    with pytest.raises(ValueError, match=r"global 'f' of 'f\(\)' cannot be copied into the valgrind process"):
        tb.Timer("f()", globals={"f": lambda: 1}).collect_callgrind()


def test_a_module_global_travels_by_name_and_an_unpicklable_one_fails_its_case_alone():
    """`globals={"mylib": mylib}` is how a suite names its library: the worker imports it by name. Under
    on_error="return" a case whose global cannot travel fails alone, with the global named, before valgrind."""
    import json
    import pickle

    from torchbench_core.callgrind import _dumps, _pickle_cases

    assert pickle.loads(_dumps({"m": json}))["m"] is json
    timers = [tb.Timer("json.dumps(1)", globals={"json": json}), tb.Timer("f()", globals={"f": lambda: 1})]
    cases = [dict(t._worker_case(), index=i) for i, t in enumerate(timers)]
    blobs, errors = _pickle_cases(cases, timers, on_error="return")
    assert [i for i, _ in blobs] == [0] and list(errors) == [1]
    assert "global 'f' of 'f()' cannot be copied into the valgrind process" in errors[1]


def test_bad_arguments():
    with pytest.raises(ValueError, match="repeats must be >= 1"):
        tb.Timer("pass").collect_callgrind(repeats=0)
    with pytest.raises(ValueError, match="on_error"):
        tb.callgrind.collect_callgrind_many([tb.Timer("pass")], on_error="ignore")


# A callgrind out file as callgrind writes one (name compression, relative positions, an inlined file, a call
# whose inclusive cost follows its calls= line): libc's _int_malloc (100 + 20 inlined from arena.c), its
# unlink_chunk's memcpy (15, when realloc moves a block), a stripped libc's malloc named alone (7), pymalloc (30,
# and a call of _int_malloc counted there), a type cache miss (25, and its dict lookup, 35), and code of the
# library itself (500 + 40 + 9 + 2).
DUMP = """\
version: 1
creator: callgrind-3.19.0
positions: line
events: Ir Dr
summary: 783 46

ob=(1) /usr/lib/x86_64-linux-gnu/libc.so.6
fl=(1) ./malloc/./malloc/malloc.c
fn=(1) _int_malloc
3766 60 4
+2 40 1
fi=(2) ./malloc/./malloc/arena.c
162 20 2
fe=(1)
fn=(2) unlink_chunk.constprop.0
0 0
cfl=(6) ./string/../sysdeps/x86_64/multiarch/memmove-vec-unaligned-erms.S
cfn=(7) __memcpy_avx_unaligned_erms
calls=1 0
* 15 1
ob=(2) /usr/bin/python3.11
fl=(3) /build/Objects/obmalloc.c
fn=(3) _PyObject_Malloc
10 30 3
cfl=(1)
cfn=(1)
calls=1 3766
* 100 5
fl=(8) /build/Objects/typeobject.c
fn=(9) find_name_in_mro
40 25 2
cfl=(9) /build/Objects/dictobject.c
cfn=(10) _Py_dict_lookup
calls=3 900
* 35 3
fl=(4) /build/Python/ceval.c
fn=(4) _PyEval_EvalFrameDefault
5 500 20
cfl=(1)
cfn=(1)
calls=2 3766
* 120 7
+3 40 2
fl=(5) ???
fn=(5) malloc
0 7
fn=(6) at::native::neg_kernel(at::TensorIteratorBase&)'2
0 9
fl=(4)
fn=(4)
6 2
"""


def test_the_layout_driven_share_of_a_dump_is_those_functions_and_what_they_call(tmp_path):
    """Issue 61: the instructions a dump counts in code whose path follows memory addresses, glibc's malloc,
    CPython's pymalloc and its type cache's misses, by file where debug symbols name it and by name where they
    do not; a call's inclusive cost (the line after calls=) is not a caller's own, except such code's call of
    other code (memcpy, a dict lookup), and the rest of the dump is the code's."""
    from torchbench_core._callgrind_worker import dump_layout_driven, dump_totals, is_layout_driven

    path = tmp_path / "callgrind.out.1"
    path.write_text(DUMP)
    assert dump_layout_driven(path) == 60 + 40 + 20 + 15 + 30 + 7 + 25 + 35
    assert dump_totals(path)["Ir"] - dump_layout_driven(path) == 500 + 40 + 9 + 2
    assert is_layout_driven("???", "_int_free") and is_layout_driven(None, "unlink_chunk.constprop.0")
    assert is_layout_driven("/x/Objects/obmalloc.c", "pymalloc_alloc")
    assert is_layout_driven("/x/Objects/typeobject.c", "assign_version_tag.isra.0")
    assert not is_layout_driven("???", "malloc_usable") and not is_layout_driven("???", "_PyType_Lookup")
    assert not is_layout_driven("/x/aten/src/ATen/native/Copy.cpp", "at::native::copy_")


def test_code_counts_subtract_the_layout_driven_share_and_its_baseline():
    stats = CallgrindStats(tb.TaskSpec("x", "pass"), 10, False, *(FunctionCounts((), b) for b in (True, False)),
                           *(FunctionCounts((), b) for b in (True, False)), None, stmt_total=5_000,
                           baseline_total=300, stmt_layout_driven=900, baseline_layout_driven=20)
    assert stats.layout_driven(subtract_baseline=True) == 880 and stats.layout_driven() == 900
    assert stats.code_counts(subtract_baseline=True) == 4_700 - 880
    assert CallgrindStats.from_dict(stats.to_dict()).code_counts() == 4_100
    unread = CallgrindStats.from_dict({**stats.to_dict(), "stmt_layout_driven": None})
    assert unread.layout_driven() is None and unread.code_counts() == 5_000
