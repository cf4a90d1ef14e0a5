"""Refusals: what hawk refuses when a kernel is defined (hawk.KernelError naming the kernel,
this file, the offending line and what is allowed instead), and what eagle refuses when a
plan is bound (TypeError / ValueError / eagle.ModeError naming the kernel and the plane, with
nothing written). Each offending line below ends with a `# E:<tag>` marker; the expected
line number is found from it."""

import numpy as np
import pytest

import eagle
import eagle.plan
import hawk
from hawk import Guard, Mutable, Param, Scalar, Table, Terminated, Vector
from hawk.math import norm, vec, where

from conftest import outputs_for, plan_kernels

_LINES = open(__file__).read().splitlines()


def line_of(tag: str) -> int:
    hits = [i + 1 for i, line in enumerate(_LINES) if line.rstrip().endswith(f"# E:{tag}")]
    assert len(hits) == 1, (tag, hits)
    return hits[0]


def check(excinfo, kernel: str, tag: str, *hints: str) -> str:
    """The refusal is a hawk.KernelError whose message names the kernel, this file and the
    marked line, and says what is allowed instead (one of hints)."""
    err = excinfo.value
    assert isinstance(err, hawk.KernelError), type(err)
    msg = str(err)
    assert f"'{kernel}'" in msg, msg
    assert f"test_errors.py:{line_of(tag)}:" in msg, (line_of(tag), msg)
    assert any(h in msg for h in hints), (hints, msg)
    return msg


# ---------------------------------------------------------------- statements and expressions


def test_while():
    with pytest.raises(hawk.KernelError) as e:
        @hawk.kernel
        def k_while(x: Scalar, out: Mutable[Scalar]):
            r = x
            while r > 0:  # E:while
                r = r - 1.0
            out = r
    check(e, "k_while", "while", "for i in range(K)")


def test_print():
    with pytest.raises(hawk.KernelError) as e:
        @hawk.kernel
        def k_print(x: Scalar, out: Mutable[Scalar]):
            out = x
            print(x)  # E:print
    check(e, "k_print", "print", "write the value to a Mutable")


def test_list():
    with pytest.raises(hawk.KernelError) as e:
        @hawk.kernel
        def k_list(x: Scalar, out: Mutable[Scalar]):
            pair = [x, x]  # E:list
            out = x
    check(e, "k_list", "list", "vec(a, b, c)")


def test_string_statement():
    with pytest.raises(hawk.KernelError) as e:
        @hawk.kernel
        def k_str_stmt(x: Scalar, out: Mutable[Scalar]):
            out = x
            "not a docstring"  # E:str_stmt
    check(e, "k_str_stmt", "str_stmt", "docstring")


def test_string_value():
    with pytest.raises(hawk.KernelError) as e:
        @hawk.kernel
        def k_str_value(x: Scalar, out: Mutable[Scalar]):
            label = "speed"  # E:str_value
            out = x
    # says what is allowed instead, like the statement form does
    check(e, "k_str_value", "str_value", "docstring", "instead", "use ")


def test_docstring_is_allowed():
    @hawk.kernel
    def k_doc(x: Scalar, out: Mutable[Scalar]):
        """Only a docstring may be a string."""
        out = x
    assert k_doc.name == "k_doc"


def test_numpy_inside_kernel():
    with pytest.raises(hawk.KernelError) as e:
        @hawk.kernel
        def k_np(x: Scalar, out: Mutable[Scalar]):
            out = np.sin(x)  # E:np
    check(e, "k_np", "np", "hawk.math")


def test_attribute_on_a_plane():
    with pytest.raises(hawk.KernelError) as e:
        @hawk.kernel
        def k_real(x: Scalar, out: Mutable[Scalar]):
            out = x.real  # E:real
    check(e, "k_real", "real", "hawk.math")


def test_unknown_hawk_math_function():
    with pytest.raises(hawk.KernelError) as e:
        @hawk.kernel
        def k_nomath(x: Scalar, out: Mutable[Scalar]):
            out = hawk.math.lgamma(x)  # E:nomath
    check(e, "k_nomath", "nomath", "hawk.math")


@hawk.func
def rec_a(u):
    return rec_b(u) + 1.0  # E:rec_a


@hawk.func
def rec_b(u):
    return rec_a(u) * 2.0  # E:rec_b


def test_recursion_through_helpers():
    with pytest.raises(hawk.KernelError) as e:
        @hawk.kernel
        def k_rec(x: Scalar, out: Mutable[Scalar]):
            out = rec_a(x)
    msg = str(e.value)
    assert "'k_rec'" in msg and "recursi" in msg
    assert f"test_errors.py:{line_of('rec_b')}:" in msg or f"test_errors.py:{line_of('rec_a')}:" in msg
    assert "loop" in msg  # what to do instead


def test_unknown_name():
    with pytest.raises(hawk.KernelError) as e:
        @hawk.kernel
        def k_unknown(x: Scalar, out: Mutable[Scalar]):
            out = x + not_defined_anywhere  # E:unknown  # noqa: F821
    check(e, "k_unknown", "unknown", "a kernel can use")


def test_python_function_call():
    with pytest.raises(hawk.KernelError) as e:
        @hawk.kernel
        def k_pyfn(x: Scalar, out: Mutable[Scalar]):
            out = line_of(x)  # E:pyfn
    check(e, "k_pyfn", "pyfn", "@hawk.func")


def test_assign_to_param():
    with pytest.raises(hawk.KernelError) as e:
        @hawk.kernel
        def k_param(x: Scalar, s: Param, out: Mutable[Scalar]):
            s = 2.0  # E:param
            out = x * s
    check(e, "k_param", "param", "local variable", "Mutable")


def test_assign_to_input_plane():
    with pytest.raises(hawk.KernelError) as e:
        @hawk.kernel
        def k_input(x: Scalar, out: Mutable[Scalar]):
            x = x + 1.0  # E:input
            out = x
    check(e, "k_input", "input", "Mutable[")


def test_augmented_assign_to_input_plane():
    with pytest.raises(hawk.KernelError) as e:
        @hawk.kernel
        def k_input_aug(x: Scalar, out: Mutable[Scalar]):
            x += 1.0  # E:input_aug
            out = x
    check(e, "k_input_aug", "input_aug", "Mutable[")


def test_assign_to_table():
    with pytest.raises(hawk.KernelError) as e:
        @hawk.kernel
        def k_table_w(w: Table[Scalar], x: Scalar, out: Mutable[Scalar]):
            w = x  # E:table_w
            out = x
    check(e, "k_table_w", "table_w", "read-only")


def test_vector_index_out_of_range():
    with pytest.raises(hawk.KernelError) as e:
        @hawk.kernel
        def k_vidx(v: Vector[3], out: Mutable[Scalar]):
            out = v[0] + v[3]  # E:vidx
    check(e, "k_vidx", "vidx", "0..2")


def test_vector_component_write_out_of_range():
    with pytest.raises(hawk.KernelError) as e:
        @hawk.kernel
        def k_vidx_w(v: Vector[3], out: Mutable[Vector[3]]):
            w = v
            w[-4] = 1.0  # E:vidx_w
            out = w
    check(e, "k_vidx_w", "vidx_w", "0..2")


def test_vector_and_bool():
    with pytest.raises(hawk.KernelError) as e:
        @hawk.kernel
        def k_vbool(v: Vector[3], x: Scalar, out: Mutable[Vector[3]]):
            out = v * (x > 0.0)  # E:vbool
    check(e, "k_vbool", "vbool", "where(cond, a, b)")


def test_bool_in_arithmetic():
    with pytest.raises(hawk.KernelError) as e:
        @hawk.kernel
        def k_bool_arith(x: Scalar, out: Mutable[Scalar]):
            out = x + (x > 0.0)  # E:bool_arith
    check(e, "k_bool_arith", "bool_arith", "where(cond, a, b)")


def test_vector_comparison():
    with pytest.raises(hawk.KernelError) as e:
        @hawk.kernel
        def k_vcmp(a: Vector[3], b: Vector[3], out: Mutable[Scalar]):
            out = where(a < b, 1.0, 0.0)  # E:vcmp
    check(e, "k_vcmp", "vcmp", "norm(v)", "v[i]")


def test_if_branches_with_different_types():
    with pytest.raises(hawk.KernelError) as e:
        @hawk.kernel
        def k_branches(x: Scalar, v: Vector[3], out: Mutable[Scalar]):
            if x > 0.0:  # E:branches
                r = x
            else:
                r = v
            out = x + r[0]
    check(e, "k_branches", "branches", "same type")


def test_mismatched_vector_sizes():
    with pytest.raises(hawk.KernelError) as e:
        @hawk.kernel
        def k_sizes(a: Vector[3], b: Vector[2], out: Mutable[Vector[3]]):
            out = a + b  # E:sizes
    check(e, "k_sizes", "sizes", "Vector[2]")


def test_return_in_kernel():
    with pytest.raises(hawk.KernelError) as e:
        @hawk.kernel
        def k_return(x: Scalar, out: Mutable[Scalar]):
            out = x
            return out  # E:return
    check(e, "k_return", "return", "Mutable")


def test_kernel_with_no_output():
    with pytest.raises(hawk.KernelError) as e:
        @hawk.kernel
        def k_noout(x: Scalar, y: Scalar):  # E:noout
            z = x + y
    check(e, "k_noout", "noout", "Mutable[Scalar]")


def test_loop_with_runtime_bound():
    with pytest.raises(hawk.KernelError) as e:
        @hawk.kernel
        def k_loop_rt(x: Scalar, n: Param, out: Mutable[Scalar]):
            acc = 0.0
            for i in range(n):  # E:loop_rt
                acc = acc + x
            out = acc
    check(e, "k_loop_rt", "loop_rt", "range(K)", "known when")


def test_wrong_arity_of_math_function():
    with pytest.raises(hawk.KernelError) as e:
        @hawk.kernel
        def k_arity(x: Scalar, out: Mutable[Scalar]):
            out = hawk.math.atan2(x)  # E:arity
    check(e, "k_arity", "arity", "takes 2 arguments")


# ---------------------------------------------------------------- signatures


def test_annotation_float():
    with pytest.raises(hawk.KernelError) as e:
        @hawk.kernel
        def k_float(
            x: float,  # E:float
            out: Mutable[Scalar],
        ):
            out = x
    msg = check(e, "k_float", "float", "Param, Scalar, Vector[k]")
    assert "'x'" in msg


def test_annotation_vector_without_size():
    with pytest.raises(hawk.KernelError) as e:
        @hawk.kernel
        def k_vec(
            x: Vector,  # E:vec_nok
            out: Mutable[Scalar],
        ):
            out = x
    check(e, "k_vec", "vec_nok", "Vector[k]")


def test_annotation_mutable_without_type():
    with pytest.raises(hawk.KernelError) as e:
        @hawk.kernel
        def k_mut(
            x: Scalar,
            out: Mutable,  # E:mut_not
        ):
            out = x
    check(e, "k_mut", "mut_not", "Mutable[Scalar]")


def test_annotation_mutable_of_param():
    """Mutable[Param] is a sum over samples (`out = hawk.sum(x)`): a per-sample value assigned
    to it is refused at the assignment."""
    with pytest.raises(hawk.KernelError) as e:
        @hawk.kernel
        def k_mut_p(
            x: Scalar,
            out: Mutable[Param],
        ):
            out = x  # E:mut_param
    check(e, "k_mut_p", "mut_param", "is a Mutable[Param] output, one value per launch: assign it a sum over the samples, `out = hawk.sum(x)`")


def test_vector_zero_size_is_refused():
    with pytest.raises(TypeError, match="positive integer"):
        Vector[0]


def test_missing_annotation():
    with pytest.raises(hawk.KernelError) as e:
        @hawk.kernel
        def k_missing(
            x,  # E:missing
            out: Mutable[Scalar],
        ):
            out = x
    check(e, "k_missing", "missing", "annotate it")


def test_default_value():
    with pytest.raises(hawk.KernelError) as e:
        @hawk.kernel
        def k_default(
            x: Scalar,
            out: Mutable[Scalar] = None,  # E:default
        ):
            out = x
    check(e, "k_default", "default", "pass every value when binding")


def test_varargs():
    with pytest.raises(hawk.KernelError) as e:
        @hawk.kernel
        def k_varargs(
            x: Scalar,
            *rest,  # E:varargs
        ):
            x = x
    msg = str(e.value)
    assert "'k_varargs'" in msg and f"test_errors.py:{line_of('varargs')}:" in msg


def test_decorator_arguments():
    with pytest.raises(ValueError, match="steps"):
        hawk.kernel(steps=0)
    with pytest.raises(TypeError, match="Guard"):
        hawk.kernel(guard=True)


def test_a_kernel_called_directly_runs_and_checks_its_arguments():
    @hawk.kernel
    def k_call(x: Scalar, out: Mutable[Scalar]):
        out = x
    np.testing.assert_array_equal(k_call(np.arange(3.0)), np.arange(3.0))  # tests/test_one_call.py
    with pytest.raises(TypeError, match="hawk kernel 'k_call': missing a value for 'x'"):
        k_call(out=np.zeros(3))


def test_errors_in_helpers_name_the_helper_line():
    @hawk.func
    def bad_helper(u):
        w = [u]  # E:helper_list
        return u

    with pytest.raises(hawk.KernelError) as e:
        @hawk.kernel
        def k_uses_bad_helper(x: Scalar, out: Mutable[Scalar]):
            out = bad_helper(x)
    msg = check(e, "k_uses_bad_helper", "helper_list", "vec(")
    assert "bad_helper" in msg


# ---------------------------------------------------------------- exec() of a string


KERNEL_SOURCE = '''
import hawk
from hawk import Mutable, Scalar, Param

@hawk.kernel
def from_exec(x: Scalar, s: Param, out: Mutable[Scalar]):
    out = x * s + 1.0
'''


def test_kernel_defined_by_exec(run_kernel):
    source = KERNEL_SOURCE  # held in a variable while exec runs
    ns: dict = {}
    exec(source, ns)
    k = ns["from_exec"]
    assert isinstance(k, hawk.Kernel) and k.name == "from_exec"
    x = np.linspace(-1, 1, 33)
    outs = outputs_for(k, x.size, x.dtype)
    assert set(outs) == {"out"}
    run_kernel(k, x=x, s=3.0, **outs)
    np.testing.assert_array_equal(outs["out"], x * 3.0 + 1.0)


def test_exec_ignores_another_text_linecache_holds_under_the_same_name(run_kernel, monkeypatch):
    """A library that exec's code may leave its own text in linecache under "<string>"
    (pytest-xdist's execnet does): the kernel's source is the string that compiles to it."""
    import linecache

    other = "import sys\n\n\n\n\ndef channel(x):\n    return x\n"
    monkeypatch.setitem(linecache.cache, "<string>", (len(other), None, other.splitlines(True), "<string>"))
    source = KERNEL_SOURCE
    ns: dict = {}
    exec(source, ns)
    x = np.linspace(-1, 1, 9)
    outs = outputs_for(ns["from_exec"], x.size, x.dtype)
    run_kernel(ns["from_exec"], x=x, s=2.0, **outs)
    np.testing.assert_array_equal(outs["out"], x * 2.0 + 1.0)


def test_kernel_defined_by_exec_of_compiled_code_with_filename(cache_dir):
    source = KERNEL_SOURCE.replace("from_exec", "from_exec2")
    ns: dict = {}
    exec(compile(source, "generated_kernels.py", "exec"), ns)
    k = ns["from_exec2"]
    (plan,) = eagle.plan.auto([k], cache_dir=cache_dir)
    x = np.arange(5.0)
    out = np.zeros(5)
    plan.bind(x=x, s=-2.0, out=out).launch()
    np.testing.assert_array_equal(out, x * -2.0 + 1.0)


def test_exec_error_names_line_in_string():
    source = KERNEL_SOURCE.replace("out = x * s + 1.0", "out = x\n    s = 1.0")
    with pytest.raises(hawk.KernelError) as e:
        exec(source, {})
    msg = str(e.value)
    assert "'from_exec'" in msg and ":8:" in msg and "Param 's'" in msg


# ---------------------------------------------------------------- binding errors (eagle)


@hawk.kernel
def bk(x: Scalar, a: Vector[3], s: Param, done: Terminated, out: Mutable[Scalar], outv: Mutable[Vector[3]]):
    out = x * s
    outv = a * x
    done = x > 100.0


@hawk.kernel
def bk_table(w: Table[Vector[3]], x: Scalar, out: Mutable[Scalar]):
    out = w.at(x)[1]


@hawk.kernel(guard=Guard(active_set=True))
def bk_guard_nomask(x: Scalar, out: Mutable[Scalar]):
    out = x


@pytest.fixture(scope="module")
def bplans(module_cache_dir):
    return plan_kernels([bk, bk_table], module_cache_dir)


def good_values(n=16, dtype=np.float64):
    return dict(
        x=np.linspace(0, 1, n).astype(dtype),
        a=np.ones((3, n), dtype),
        s=2.0,
        done=np.zeros(n, bool),
        out=np.full(n, 7.0, dtype),
        outv=np.full((3, n), 7.0, dtype),
    )


def snapshot(values):
    return {k: np.copy(v) for k, v in values.items() if isinstance(v, np.ndarray)}


def assert_unchanged(values, snap):
    for k, v in snap.items():
        np.testing.assert_array_equal(values[k], v, err_msg=k)


def bind_fails(plan, exc, values, *needles, finished_count=None):
    snap = snapshot(values)
    extra = {} if finished_count is None else {"finished_count": finished_count}
    fc_snap = None if finished_count is None else np.copy(finished_count)
    with pytest.raises(exc) as e:
        plan.bind(**values, **extra)
    msg = str(e.value)
    assert f"'{plan.kernel.name}'" in msg, msg
    for nd in needles:
        assert nd in msg, (nd, msg)
    assert_unchanged(values, snap)  # a failed bind writes nothing
    if finished_count is not None:
        np.testing.assert_array_equal(finished_count, fc_snap)
    return msg


def test_good_bind_works(bplans):
    v = good_values()
    fc = np.zeros(1, np.uint32)
    plan = bplans["bk"]
    b = plan.bind(**v, finished_count=fc)
    assert b.n == 16
    b.launch()
    np.testing.assert_array_equal(v["out"], v["x"] * 2.0)
    np.testing.assert_array_equal(v["outv"], v["a"] * v["x"])
    assert fc[0] == 0 and not v["done"].any()


def test_unknown_name(bplans):
    v = good_values()
    v["speed"] = np.zeros(16)
    bind_fails(bplans["bk"], TypeError, v, "'speed'")


def test_missing_plane(bplans):
    v = good_values()
    del v["outv"]
    bind_fails(bplans["bk"], TypeError, v, "outv")


def test_missing_param(bplans):
    v = good_values()
    del v["s"]
    bind_fails(bplans["bk"], TypeError, v, "'s'")


def test_wrong_shape_scalar(bplans):
    v = good_values()
    v["out"] = np.zeros(15)
    msg = bind_fails(bplans["bk"], ValueError, v, "'out'", "(16,)")
    assert "(15,)" in msg


def test_wrong_shape_vector_transposed(bplans):
    v = good_values()
    v["a"] = np.ones((16, 3))  # (N, 3) instead of (3, N)
    bind_fails(bplans["bk"], ValueError, v, "'a'", "(3, 16)")


def test_wrong_shape_table(bplans):
    w = np.ones((3, 8))  # (k, M) instead of (M, k)
    x = np.zeros(4)
    out = np.zeros(4)
    bind_fails(bplans["bk_table"], ValueError, dict(w=w, x=x, out=out), "'w'", "(3, 3)")


def test_mixed_float_dtypes(bplans):
    v = good_values()
    v["outv"] = v["outv"].astype(np.float32)
    msg = bind_fails(bplans["bk"], eagle.ModeError, v, "'outv'", "float32", "float64")
    assert issubclass(eagle.ModeError, TypeError)


def test_integer_plane(bplans):
    v = good_values()
    v["x"] = np.arange(16, dtype=np.int64)
    bind_fails(bplans["bk"], eagle.ModeError, v, "'x'", "int64")


def test_integer_plane_float32_rest(bplans):
    v = good_values(dtype=np.float32)
    v["a"] = np.ones((3, 16), dtype=np.int32)
    bind_fails(bplans["bk"], eagle.ModeError, v, "'a'", "int32")


def test_non_contiguous(bplans):
    v = good_values()
    big = np.zeros(32)
    v["x"] = big[::2]
    bind_fails(bplans["bk"], ValueError, v, "'x'", "contiguous")


def test_non_contiguous_fortran_vector(bplans):
    v = good_values()
    v["outv"] = np.asfortranarray(np.zeros((3, 16)))
    bind_fails(bplans["bk"], ValueError, v, "'outv'", "contiguous")


def test_read_only_output(bplans):
    v = good_values()
    v["out"].flags.writeable = False
    bind_fails(bplans["bk"], ValueError, v, "'out'", "read-only")


def test_read_only_mask(bplans):
    v = good_values()
    v["done"].flags.writeable = False
    bind_fails(bplans["bk"], ValueError, v, "'done'", "read-only")


def test_read_only_input_is_fine(bplans):
    v = good_values()
    v["x"].flags.writeable = False
    bplans["bk"].bind(**v).launch()
    np.testing.assert_array_equal(v["out"], v["x"] * 2.0)


OVERLAP = ("overlap in memory, and the kernel writes {w}; a plane the kernel writes needs memory of its own (a "
           "launch's samples run in any order, on any thread): bind a copy to one of them (its .copy()); to update "
           "an array in place, make it a Mutable and bind it once")


def _overlapping(v, case):
    """``v`` with a written plane sharing memory with another bound array, as ``case`` says;
    (the two names as the refusal orders them, the written one)."""
    if case == "same array":
        v["out"] = v["x"]
        return ("x", "out"), "out"
    if case == "partial views":
        buf = np.zeros(24)
        v["x"], v["out"] = buf[:16], buf[8:]
        return ("x", "out"), "out"
    if case == "a row of a Vector":
        v["out"] = v["outv"][1]
        return ("out", "outv"), "out"
    if case == "mask over a plane's bytes":
        v["done"] = v["out"].view(np.bool_)[:16]
        return ("done", "out"), "done"
    if case == "Param array inside a plane":
        v["s"] = v["out"][3:4]
        return ("s", "out"), "out"
    raise AssertionError(case)


@pytest.mark.parametrize("case", ["same array", "partial views", "a row of a Vector", "mask over a plane's bytes",
                                  "Param array inside a plane"])
def test_a_written_plane_sharing_memory_is_refused(bplans, case):
    """A plane the kernel writes may not overlap another bound array (the published eagle binds
    such arrays and its results then depend on the order samples run in); the refusal names
    both, comes before anything runs, and writes nothing."""
    v = good_values()
    (a, b), w = _overlapping(v, case)
    bind_fails(bplans["bk"], ValueError, v, f"eagle: kernel 'bk': '{a}' and '{b}' " + OVERLAP.format(w=f"'{w}'"))


def test_finished_count_sharing_memory_with_a_plane_is_refused(bplans):
    v = good_values()
    fc = v["out"].view(np.uint32)[2:3]
    bind_fails(bplans["bk"], ValueError, v, "'out' and 'finished_count' " + OVERLAP.format(w="'out'"), finished_count=fc)


def test_read_planes_may_share_memory_and_adjacent_planes_are_fine(bplans):
    """Only a written array needs memory of its own: one array bound to two read planes (here
    x and a row of the Vector a) is fine, and so are a read and a written plane that are
    neighbours in one buffer."""
    v = good_values()
    buf = np.zeros(32)
    v["a"][2] = 5.0
    v["x"] = v["a"][2]  # x reads the same memory as a's last row
    v["out"] = buf[16:]  # written, right after 16 doubles nothing else uses
    bplans["bk"].bind(**v).launch()
    np.testing.assert_array_equal(v["out"], np.full(16, 10.0))
    np.testing.assert_array_equal(v["outv"][2], np.full(16, 25.0))
    np.testing.assert_array_equal(buf[:16], np.zeros(16))  # the neighbour was not written


def test_check_disjoint_finds_every_overlap_a_pairwise_check_finds():
    """eagle.binding.check_disjoint sweeps the spans sorted by address; on random spans it
    refuses exactly where a check of every pair finds a written span overlapping another, and
    names the first such pair in binding order."""
    from eagle.binding import check_disjoint

    rng = np.random.default_rng(7)
    refused = 0
    for _ in range(2000):
        k = int(rng.integers(1, 7))
        spans = [(f"p{i}", int(rng.integers(0, 64)), int(rng.integers(0, 16)), bool(rng.random() < 0.4)) for i in range(k)]
        pairs = [(i, j) for i in range(k) for j in range(i + 1, k)
                 if (spans[i][3] or spans[j][3]) and spans[i][2] > 0 and spans[j][2] > 0
                 and spans[i][1] < spans[j][1] + spans[j][2] and spans[j][1] < spans[i][1] + spans[i][2]]
        if not pairs:
            check_disjoint("w", spans)
            continue
        refused += 1
        i, j = min(pairs)
        with pytest.raises(ValueError) as e:
            check_disjoint("w", spans)
        assert str(e.value).startswith(f"w: 'p{i}' and 'p{j}' overlap in memory, and the kernel writes "), (spans, str(e.value))
    assert 200 < refused < 1800


def test_mask_not_bool(bplans):
    v = good_values()
    v["done"] = np.zeros(16, np.uint8)
    bind_fails(bplans["bk"], eagle.ModeError, v, "'done'", "bool")


def test_mask_wrong_length(bplans):
    v = good_values()
    v["done"] = np.zeros(15, bool)
    bind_fails(bplans["bk"], ValueError, v, "'done'", "(16,)")


@pytest.mark.parametrize("fc", [np.zeros(1, np.int32), np.zeros(1, np.uint64), np.zeros(2, np.uint32),
                                np.zeros((), np.uint32)])
def test_finished_count_wrong(bplans, fc):
    v = good_values()
    bind_fails(bplans["bk"], ValueError, v, "finished_count", finished_count=fc)


def test_param_errors(bplans):
    v = good_values()
    v["s"] = np.array([1.0, 2.0])
    bind_fails(bplans["bk"], ValueError, v, "'s'")
    v["s"] = True
    bind_fails(bplans["bk"], TypeError, v, "'s'")
    v["s"] = "2.0"
    bind_fails(bplans["bk"], TypeError, v, "'s'")


def test_failed_bind_then_good_bind(bplans):
    v = good_values()
    bad = dict(v, out=np.zeros(3))
    with pytest.raises(ValueError):
        bplans["bk"].bind(**bad)
    assert_unchanged(v, snapshot(good_values()))
    bplans["bk"].bind(**v).launch()
    np.testing.assert_array_equal(v["out"], v["x"] * 2.0)


def test_active_set_without_mask(cache_dir):
    (plan,) = eagle.plan.auto([bk_guard_nomask], cache_dir=cache_dir)
    x = np.zeros(4)
    out = np.ones(4)
    with pytest.raises(ValueError, match="Terminated"):
        plan.bind(x=x, out=out)
    np.testing.assert_array_equal(out, 1.0)


def test_plan_auto_errors(cache_dir):
    with pytest.raises(TypeError):
        eagle.plan.auto([lambda: None], cache_dir=cache_dir)
    with pytest.raises(ValueError, match="unknown target"):
        eagle.plan.auto([bk], targets=("tpu",), cache_dir=cache_dir)
