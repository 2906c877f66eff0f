"""np.random in compiled code (issue 14 item 6): np.random.default_rng(seed) and the Generator methods random,
uniform, integers, normal, standard_normal, exponential, standard_exponential and permutation (with float32 draws
where NumPy has them) give NumPy's numbers for the same seed, element by element and bit
for bit (PCG64 seeded through SeedSequence, Lemire's bounded integers, NumPy's 256-level ziggurat), in the order
the function draws them; a Generator passed in continues where NumPy's would; errors are NumPy's, at the line;
what is not built is a CompileError naming the line. Every comparison is exact equality with NumPy running the
same draws. The file runs on cpu and, in the openmp pass, on openmp, whose numbers must be the same.
"""
import numpy as np
import pytest

import lorikeet as lk
from helpers import J, skip_on_gpu
from numpy.random import default_rng

SEEDS = [0, 1, 42, 12345, 2**32 - 1, 2**32, 2**40 + 7, 2**63 - 1]


def draw_all(seed, n):
    rng = np.random.default_rng(seed)
    a = rng.random(n)
    b = rng.standard_normal((2, n))
    c = rng.integers(-5, 100, n)
    d = rng.normal(3.0, 2.0, n)
    e = rng.uniform(1, 2, size=n)
    f = rng.integers(0, 2**40, size=(n, 2))
    return a, b, c, d, e, f, rng.random(), rng.integers(10), rng.normal(), rng.uniform(), rng.standard_normal()


def same(got, exp):
    """Exact equality, value and type (a scalar draw is a Python float or a NumPy integer, as NumPy's)."""
    assert type(got) is type(exp), (type(got), type(exp))
    if isinstance(exp, np.ndarray):
        assert got.dtype == exp.dtype and got.shape == exp.shape
        assert np.array_equal(got, exp), (got, exp)
    else:
        assert got == exp or (got != got and exp != exp), (got, exp)


@pytest.mark.parametrize("seed", SEEDS)
def test_every_method_gives_numpys_stream_for_the_seed(seed):
    got, exp = J(draw_all)(seed, 7), draw_all(seed, 7)
    for g, e in zip(got, exp):
        same(g, e)


def normals(seed, n):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(n), rng.normal(-1.5, 0.25, n)


def test_normal_is_numpys_ziggurat_bit_for_bit_tails_included():
    """200,000 draws reach the ziggurat's rare paths (the wedges, and the tail beyond r = 3.654 at level 0):
    every one equals NumPy's, so the tables are NumPy's bit for bit."""
    got, exp = J(normals)(2024, 200_000), normals(2024, 200_000)
    assert np.abs(exp[0]).max() > 3.6541528853610088  # the tail was drawn
    for g, e in zip(got, exp):
        same(g, e)


def integer_forms(seed, n):
    rng = np.random.default_rng(seed)
    return (rng.integers(n), rng.integers(3, size=n), rng.integers(-2**63, 2**63 - 1, n, endpoint=True),
            rng.integers(0, 2**32, n), rng.integers(0, 2**32 - 1, n), rng.integers(5, 6, n),
            rng.integers(-7, 1000, n, dtype=np.int32), rng.random(n), rng.integers(0, 10, n, np.int32, True),
            rng.integers(-2**31, 2**31, n, dtype=np.int32), rng.integers(10, 20, (2, n), endpoint=True),
            rng.integers(0, 2**62, n))


@pytest.mark.parametrize("seed", [0, 7, 99])
def test_integers_forms_dtypes_and_endpoint(seed):
    """Lemire's method on 32 and 64 bits, the full range, a one-value range, int32 draws (which use and leave the
    buffered half of a 64-bit draw, then random() after them), endpoint=True."""
    got, exp = J(integer_forms)(seed, 9), integer_forms(seed, 9)
    for g, e in zip(got, exp):
        same(g, e)


def sizes(seed):
    rng = np.random.default_rng(seed)
    return rng.random((2, 3, 4)), rng.random(0), rng.normal(0.0, 1.0, (3, 0)), rng.random((1,)), rng.integers(4, size=(0, 2))


def test_sizes_int_tuple_and_empty():
    got, exp = J(sizes)(5), sizes(5)
    for g, e in zip(got, exp):
        same(g, e)


def sizes_from_variables(seed, shape, n):
    rng = np.random.default_rng(seed)
    return rng.random(shape), rng.uniform(-1.0, 1.0, shape), rng.standard_normal(n), rng.integers(0, n, shape)


def test_sizes_from_arguments():
    got, exp = J(sizes_from_variables)(3, (4, 5), 6), sizes_from_variables(3, (4, 5), 6)
    for g, e in zip(got, exp):
        same(g, e)


def keywords(seed):
    rng = np.random.default_rng(seed=seed)
    return (rng.normal(loc=2.0, scale=3.0, size=4), rng.uniform(high=5.0, size=(2,)), rng.integers(low=1, high=9, size=3),
            rng.random(size=2), rng.standard_normal(size=2), rng.normal(size=3))


def test_keyword_arguments():
    got, exp = J(keywords)(11), keywords(11)
    for g, e in zip(got, exp):
        same(g, e)


def scalar_loop(seed, n):
    rng = np.random.default_rng(seed)
    x = np.empty(n)
    k = np.empty(n, dtype=np.int64)
    for i in range(n):
        x[i] = rng.normal(1.0, 2.0) + rng.random()
        k[i] = rng.integers(0, 1000)
    return x, k


def test_scalar_draws_in_a_loop_keep_the_order():
    """A plain loop of scalar draws: one stream, in program order (the loop is never run in parallel)."""
    got, exp = J(scalar_loop)(8, 500), scalar_loop(8, 500)
    for g, e in zip(got, exp):
        same(g, e)


def two_in_a_row(rng, n):
    a = rng.random(n)
    b = rng.random(n)
    return b - a  # the second draw stays second, whatever the passes do


def test_draws_are_never_reordered_or_shared():
    r1, r2 = np.random.default_rng(5), np.random.default_rng(5)
    a = r2.random(4)
    b = r2.random(4)
    same(J(two_in_a_row)(r1, 4), b - a)


def with_argument(rng, n):
    return rng.random(n), rng.integers(0, 7, n, dtype=np.int32), rng.normal()


@pytest.mark.parametrize("seed", [0, 3, 2**50])
def test_a_generator_argument_continues_where_numpys_would(seed):
    """A Generator passed in: its state is read at the call and written back after it, so what the caller draws
    next is what NumPy alone gives (int32 draws leave a buffered half: it travels too)."""
    mine, ref = np.random.default_rng(seed), np.random.default_rng(seed)
    for _ in range(3):
        got, exp = J(with_argument)(mine, 5), with_argument(ref, 5)
        for g, e in zip(got, exp):
            same(g, e)
        assert mine.bit_generator.state == ref.bit_generator.state
    assert mine.random() == ref.random()
    assert np.array_equal(mine.integers(0, 100, 10, dtype=np.int32), ref.integers(0, 100, 10, dtype=np.int32))


def draws_then_fails(rng, n):
    a = rng.random(n)
    b = rng.integers(5, 3)  # ValueError after a draw
    return a, b


def test_a_generator_argument_is_written_back_when_the_call_raises():
    mine, ref = np.random.default_rng(4), np.random.default_rng(4)
    with pytest.raises(ValueError, match="low >= high"):
        J(draws_then_fails)(mine, 6)
    with pytest.raises(ValueError, match="low >= high"):
        draws_then_fails(ref, 6)
    assert mine.bit_generator.state == ref.bit_generator.state


def passed_on(rng, n):
    return helper_draw(rng, n) + helper_draw(rng, n)


def helper_draw(rng, n):
    return rng.standard_normal(n) * 2.0


def test_a_generator_passed_to_another_function():
    mine, ref = np.random.default_rng(9), np.random.default_rng(9)
    same(J(passed_on)(mine, 5), passed_on(ref, 5))
    same(mine.random(), ref.random())


def made_from(rng, n):
    same_rng = np.random.default_rng(rng)  # NumPy returns the Generator itself
    return same_rng.random(n)


def test_default_rng_of_a_generator_is_that_generator():
    mine, ref = np.random.default_rng(1), np.random.default_rng(1)
    same(J(made_from)(mine, 3), made_from(ref, 3))
    assert mine.bit_generator.state == ref.bit_generator.state


def test_the_generators_state_is_not_part_of_the_signature():
    """Two generators in different states share one specialisation (and one disk-cache key: the signature
    writes the type, Generator(PCG64), not the state)."""
    d = lk.jit(with_argument)
    d(np.random.default_rng(1), 3)
    d(np.random.default_rng(2), 3)
    d(np.random.default_rng(2**60), 3)
    assert d.signatures() == [("Generator(PCG64)", "int")]
    text = d.inspect_types(np.random.default_rng(0), 3)
    assert "Generator(PCG64)" in text


def test_the_cache_key_names_the_generators_type_only():
    from lorikeet import _key

    d = lk.jit(with_argument, backend="cpu")
    text = _key.preimage(d, ["Generator(PCG64)", "int"]).decode()
    assert "signature Generator(PCG64), int" in text


def test_other_bit_generators_are_a_type_error_naming_pcg64():
    with pytest.raises(TypeError, match="PCG64"):
        J(with_argument)(np.random.Generator(np.random.MT19937(1)), 3)
    with pytest.raises(TypeError, match="PCG64"):
        J(with_argument)(np.random.Generator(np.random.Philox(1)), 3)


def imported_by_name(seed, n):
    return default_rng(seed).normal(0.5, 2.0, n)


def test_default_rng_imported_by_name():
    same(J(imported_by_name)(77, 5), imported_by_name(77, 5))


def unseeded(n):
    rng = np.random.default_rng()
    return rng.random(n)


def test_no_seed_draws_from_the_os_entropy():
    a, b = J(unseeded)(1000), J(unseeded)(1000)
    assert a.min() >= 0.0 and a.max() < 1.0 and 0.4 < a.mean() < 0.6
    assert not np.array_equal(a, b)


# ---- errors: NumPy's, with the line ----

def bad_size(seed, n):
    return np.random.default_rng(seed).random(n)


def bad_bounds(seed, lo, hi):
    return np.random.default_rng(seed).integers(lo, hi, 3)


def bad_bounds_closed(seed, lo, hi):
    return np.random.default_rng(seed).integers(lo, hi, endpoint=True)


def bad_scale(seed, s, n):
    return np.random.default_rng(seed).normal(0.0, s, n)


def bad_range(seed, lo, hi):
    return np.random.default_rng(seed).uniform(lo, hi, 2)


def bad_int32(seed, hi):
    return np.random.default_rng(seed).integers(0, hi, 2, dtype=np.int32)


@pytest.mark.parametrize("fn,args", [
    (bad_size, (0, -1)), (bad_size, (0, (2, -3))), (bad_bounds, (0, 5, 3)), (bad_bounds, (0, 5, 5)),
    (bad_bounds, (0, 0, 0)), (bad_bounds_closed, (0, 0, -1)), (bad_bounds_closed, (0, 4, 3)), (bad_scale, (0, -1.0, 3)),
    (bad_scale, (0, -0.5, -2)), (bad_range, (0, 0.0, np.inf)), (bad_range, (0, np.nan, 1.0)), (bad_int32, (0, 2**31 + 1)),
    (bad_size, (-1, 3)),
])
def test_errors_are_numpys_at_the_line(fn, args):
    with pytest.raises((ValueError, OverflowError)) as exp:
        fn(*args)
    with pytest.raises(type(exp.value)) as got:
        J(fn)(*args)
    assert str(got.value).splitlines()[0] == str(exp.value)
    assert "line" in str(got.value) and "np.random.default_rng(seed)" in str(got.value)  # the line, shown


def test_an_empty_size_skips_integers_checks_as_numpy_does():
    def empty(seed):
        return np.random.default_rng(seed).integers(5, 3, size=0)
    same(J(empty)(0), empty(0))


# ---- float32 streams, the exponential distribution and permutation ----

def more_draws(seed, n):
    rng = np.random.default_rng(seed)
    return (rng.random(n, dtype=np.float32), rng.standard_normal((2, n), dtype=np.float32), rng.random(),
            rng.standard_exponential(n), rng.standard_exponential(n, np.float32), rng.standard_exponential(n, method="inv"),
            rng.standard_exponential((n, 2), dtype=np.float32, method="inv"), rng.exponential(2.5, n), rng.exponential(),
            rng.permutation(n), rng.random(dtype=np.float32), rng.standard_normal(dtype=np.float32),
            rng.standard_exponential(), rng.permutation(-3), rng.integers(5, size=n, dtype=np.int32), rng.random(n))


@pytest.mark.parametrize("seed", SEEDS)
def test_float32_draws_exponentials_and_permutations_give_numpys_stream(seed):
    # the float32 draws take 32 bits each, which leave half a 64-bit draw buffered: the draws after them must
    # still follow NumPy's, as the last ones here check
    got, exp = J(more_draws)(seed, 9), more_draws(seed, 9)
    assert len(got) == len(exp)
    for g, e in zip(got, exp):
        same(g, e)


def tails(seed, n):
    rng = np.random.default_rng(seed)
    return (rng.standard_exponential(n), rng.standard_exponential(n, dtype=np.float32),
            rng.standard_normal(n, dtype=np.float32))


def test_the_exponential_and_float32_ziggurats_are_numpys_tails_included():
    got, exp = J(tails)(77, 200_000), tails(77, 200_000)
    assert exp[0].max() > 7.6971174701310497 and exp[1].max() > 7.69711747 and np.abs(exp[2]).max() > 3.6541529
    for g, e in zip(got, exp):
        same(g, e)


def permute_array(seed, x):
    rng = np.random.default_rng(seed)
    return rng.permutation(x), rng.permutation(x[::-1]), rng.permutation(len(x))


@pytest.mark.parametrize("x", [np.arange(10.0), np.arange(12).reshape(4, 3), np.array([True, False, True]),
                               np.zeros(0), np.arange(2**33, 2**33 + 5, dtype=np.int64)])
def test_permutation_of_an_array_is_numpys_rows_in_numpys_order(x):
    got, exp = J(permute_array)(5, x), permute_array(5, x)
    for g, e in zip(got, exp):
        same(g, e)
    assert not np.shares_memory(got[0], x)


def shuffles(seed, x, y):
    rng = np.random.default_rng(seed)
    rng.shuffle(x)
    rng.shuffle(y)
    r = rng.shuffle(x[::2])  # a view: the shuffle shows in x
    return r, rng.random()


@pytest.mark.parametrize("seed", [0, 3, 2**40])
def test_shuffle_moves_numpys_rows_in_place(seed):
    x, y = np.arange(11.0), np.arange(20).reshape(5, 4)
    xe, ye = x.copy(), y.copy()
    got, exp = J(shuffles)(seed, x, y), shuffles(seed, xe, ye)
    assert got == exp
    same(x, xe)
    same(y, ye)


def bad_exponential(seed, s):
    return np.random.default_rng(seed).exponential(s, 3)


def test_exponentials_scale_error_is_numpys():
    with pytest.raises(ValueError, match="scale < 0"):
        J(bad_exponential)(0, -1.0)


# ---- what is not built: CompileErrors naming the line and the supported forms ----

def unsupported_method(rng, n):
    return rng.gamma(1.0, n)


def legacy(n):
    return np.random.random(n)


def returns_generator(seed):
    return np.random.default_rng(seed)


def array_parameter(rng, mu):
    return rng.normal(mu, 1.0)


def float16_random(rng, n):
    return rng.random(n, dtype=np.float16)


def test_unsupported_forms_are_compile_errors_naming_the_supported_ones():
    rng = np.random.default_rng(0)
    with pytest.raises(lk.CompileError, match=r"Generator.gamma\(\) is not supported.*random, uniform, integers, "
                                              r"normal, standard_normal, exponential, standard_exponential, permutation and shuffle"):
        J(unsupported_method)(rng, 3)
    with pytest.raises(lk.CompileError, match=r"numpy.random.random\(\) is not supported.*default_rng"):
        J(legacy)(3)
    with pytest.raises(lk.CompileError, match="returns a numpy Generator"):
        J(returns_generator)(3)
    with pytest.raises(lk.CompileError, match="broadcasting"):
        J(array_parameter)(rng, np.zeros(3))
    with pytest.raises(lk.CompileError, match="dtype must be np.float64 or np.float32"):
        J(float16_random)(rng, 3)


def in_prange(rng, x):
    for i in lk.prange(len(x)):
        x[i] = rng.random()
    return x


def in_comprehension(rng, n):
    return np.array([rng.random() for i in range(n)])


def in_map(rng, a):
    return lk.map(lambda v: v + rng.random(), a)


def test_draws_in_parallel_code_are_refused_on_every_backend():
    """A draw where iterations may run at once (prange, element code) would give another stream on openmp or
    gpu: a CompileError naming the line, on cpu too, so that no backend silently differs."""
    rng = np.random.default_rng(0)
    with pytest.raises(lk.CompileError, match="lk.prange loop") as e:
        J(in_prange)(rng, np.zeros(4))
    assert "x[i] = rng.random()" in str(e.value)
    with pytest.raises(lk.CompileError, match="element code"):
        J(in_comprehension)(rng, 4)
    with pytest.raises(lk.CompileError, match="element code"):
        J(in_map)(rng, np.zeros(4))


# ---- backends ----

def mixed(seed, n):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, n))
    y = np.sqrt(x * x + 1.0).sum(axis=1)  # parallel regions around the draws
    k = rng.integers(0, 10, n)
    u = rng.uniform(-1.0, 1.0, n)
    return x, k, u, k * y + u


def test_openmp_gives_cpus_numbers():
    skip_on_gpu("the openmp backend is compared with cpu")
    cpu = lk.jit(mixed, backend="cpu")(21, 300)
    omp = lk.jit(mixed, backend="openmp")(21, 300)
    exp = mixed(21, 300)
    for c, o in zip(cpu, omp):
        assert np.array_equal(c, o)  # every bit, the sums' too
    for c, e in zip(cpu[:3], exp[:3]):
        assert np.array_equal(c, e)  # the draws are NumPy's (the sums differ from NumPy's pairwise order in rounding)


def test_the_gpu_backend_draws_numpys_numbers_beside_its_kernels():
    """Draws run in host code, on host state, and fill device arrays with the cpu backend's numbers."""
    if lk.get_backend() != "gpu":
        pytest.skip("runs on the gpu backend (LORIKEET_BACKEND=gpu)")
    got, exp = J(mixed)(21, 300), mixed(21, 300)
    for g, e in zip(got[:3], exp[:3]):
        assert np.array_equal(np.asarray(g), e)
    mine, ref = np.random.default_rng(4), np.random.default_rng(4)
    d = lk.to_device(np.arange(5.0))
    np.testing.assert_allclose(np.asarray(J(scaled)(mine, d)), scaled(ref, np.arange(5.0)), rtol=1e-15)
    assert mine.bit_generator.state == ref.bit_generator.state


def scaled(rng, a):
    return a * rng.random()


def seeded_inside(a):
    return a * np.random.default_rng().random()


def test_a_function_that_draws_is_never_split_in_pieces():
    """Pieces of rows would each draw again (or reseed): such a call runs whole."""
    plan = lk.jit(scaled).inspect_split(np.random.default_rng(0), np.zeros((6, 2)))
    assert not plan["splittable"] and "Generator" in plan["reason"]
    plan = lk.jit(seeded_inside).inspect_split(np.zeros((6, 2)))
    assert not plan["splittable"] and "Generator" in plan["reason"]


CACHED = '''\
import json, sys
import numpy as np
import lorikeet as lk

@lk.jit
def draws(rng, seed, n):
    mine = np.random.default_rng(seed)
    return rng.normal(0.0, 1.0, n) + mine.random(n), rng.integers(0, 9, n, dtype=np.int32)

seed = int(sys.argv[1])
rng, ref = np.random.default_rng(seed), np.random.default_rng(seed)
got = draws(rng, seed + 1, 4)
mine = np.random.default_rng(seed + 1)
exp = (ref.normal(0.0, 1.0, 4) + mine.random(4), ref.integers(0, 9, 4, dtype=np.int32))
ok = all(np.array_equal(g, e) for g, e in zip(got, exp)) and rng.bit_generator.state == ref.bit_generator.state
print(json.dumps({"ok": bool(ok), "info": draws.cache_info()}))
'''


def test_code_from_the_disk_cache_draws_the_same_and_any_state_hits(tmp_path):
    """A second process (another seed, another state) loads the first one's code: the key holds the Generator's
    type only, and the loaded code draws NumPy's numbers and writes the state back."""
    import json
    import os
    import subprocess
    import sys

    script = tmp_path / "cached.py"
    script.write_text(CACHED)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LORIKEET_")}
    env.update({"PYTHONPATH": os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "pyshim"),
                "LORIKEET_CACHE_DIR": str(tmp_path / "cache"), "PYTHONDONTWRITEBYTECODE": "1"})
    outs = []
    for seed in (1, 2):
        p = subprocess.run([sys.executable, str(script), str(seed)], env=env, capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        outs.append(json.loads(p.stdout.strip().splitlines()[-1]))
    assert outs[0]["ok"] and outs[1]["ok"]
    assert outs[0]["info"] == {"hits": 0, "misses": 1, "compiles": 1}
    assert outs[1]["info"] == {"hits": 1, "misses": 0, "compiles": 0}
