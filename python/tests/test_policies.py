"""Policies written in Python run under the simulator's contract: re-implementations of l2norm and
h2o reproduce the built-in traces exactly, and every contract break is a Python exception naming
the step."""

import numpy as np
import pytest

import subevict


class PyH2O(subevict.Policy):
    """H2O as deployed: the last `recent` = k - floor(k / 2) tokens are kept, and among the others
    the smallest accumulated tracked attention leaves (ties: the lowest token)."""

    name = "py-h2o"

    def reset(self, n, k):
        self.acc = np.zeros(n)
        self.recent = k - k // 2

    def observe(self, step, attention_row):
        self.acc += attention_row

    def evict(self, step, cache):
        eligible = cache[cache <= step - self.recent]
        return eligible[np.argmin(self.acc[eligible])]  # cache is ascending: argmin's first = lowest token


def py_l2norm(step, cache, q, K, V):
    """Keep the lowest key norms: the largest norm has the lowest score."""
    return -np.sqrt(np.sum(K.astype(np.float64) ** 2, axis=1))


def compare(path, budget):
    w = subevict.read_workload(str(path))
    cells = subevict.simulate(w, ["h2o", PyH2O(), "l2norm:skip_first=0", subevict.ScorePolicy(py_l2norm, "py-l2norm")],
                              budget=budget, optimum="none")
    for cell in cells:
        p = cell["policies"]
        for builtin, mine in (("h2o", "py-h2o"), ("l2norm:skip_first=0", "py-l2norm")):
            for key in ("evicted", "last_step", "retained_mass", "output_error", "head_retained_mass"):
                assert np.array_equal(p[builtin][key], p[mine][key]), (builtin, key, cell["kv_head"])
            assert p[builtin]["total_retained_mass"] == p[mine]["total_retained_mass"]
    return cells


def test_python_h2o_and_l2norm_equal_the_builtins_on_a_tiny_workload(tiny_file):
    cells = compare(tiny_file, [0.2, 7])
    assert (cells[0]["policies"]["py-h2o"]["evicted"] >= 0).sum() > 50  # evictions happened


def test_python_h2o_and_l2norm_equal_the_builtins_on_a_real_size_gqa_workload(gqa_file):
    cells = compare(gqa_file, 0.2)
    assert len(cells) == 8 and cells[0]["group_size"] == 4


def test_a_score_list_and_a_plain_object_are_accepted():
    class Recent:  # no base class: anything with evict()
        def evict(self, step, cache):
            return int(cache[0])

    w = subevict.generate("tiny", tokens=40, seed=1)
    cells = subevict.simulate(w, ["local", Recent(), subevict.ScorePolicy(lambda s, c, q, K, V: list(c), "oldest")],
                              budget=8, kv_heads=0, optimum="none")
    p = cells[0]["policies"]
    ties = subevict.simulate(w, ["local", subevict.ScorePolicy(lambda s, c, q, K, V: np.zeros(len(c)), "ties")],
                             budget=8, kv_heads=0, optimum="none")[0]["policies"]
    assert np.array_equal(ties["local"]["evicted"], ties["ties"]["evicted"])  # equal scores: the lowest token
    assert np.array_equal(p["local"]["evicted"], p["Recent"]["evicted"])
    assert np.array_equal(p["local"]["evicted"], p["oldest"]["evicted"])


@pytest.fixture(scope="module")
def small():
    return subevict.generate("tiny", tokens=30, seed=2)


def run(w, policy):
    return subevict.simulate(w, [policy], budget=5, kv_heads=0, optimum="none")


class Returns(subevict.Policy):
    def __init__(self, value):
        self.value = value

    def evict(self, step, cache):
        return self.value(step, cache)


@pytest.mark.parametrize("answer, message", [
    (lambda s, c: 10**6, "at step 5: evict returned token 1000000, which is not in the cache"),
    (lambda s, c: s + 1, "at step 5: evict returned token 6"),
    (lambda s, c: -1, "at step 5: evict returned token -1"),
    (lambda s, c: 2**70, "at step 5: evict returned token"),
    (lambda s, c: None, "at step 5: evict returned NoneType None, expected a token"),
    (lambda s, c: 1.0, "at step 5: evict returned float"),
    (lambda s, c: True, "at step 5: evict returned bool"),
    (lambda s, c: c, "at step 5: evict returned ndarray"),
])
def test_an_evict_that_breaks_the_contract_names_the_step(small, answer, message):
    with pytest.raises(subevict.PolicyContractError, match=message.replace("(", r"\(")):
        run(small, Returns(answer))


def test_numpy_integers_are_tokens(small):
    run(small, Returns(lambda s, c: np.int32(c[0])))
    run(small, Returns(lambda s, c: c[-1]))  # np.int64: evicting the arriving token itself


@pytest.mark.parametrize("scores, message", [
    (lambda c: np.zeros(len(c) + 1), r"score returned shape \(7,\), expected \(6,\)"),
    (lambda c: np.zeros((len(c), 1)), r"score returned shape \(6, 1\)"),
    (lambda c: np.full(len(c), np.nan), "score returned NaN for token 0"),
    (lambda c: np.full(len(c), np.inf), "score returned an infinite score"),
    (lambda c: "abc", "score returned str, not convertible to float64"),
])
def test_a_score_that_breaks_the_contract_names_the_step(small, scores, message):
    policy = subevict.ScorePolicy(lambda step, cache, q, K, V: scores(cache), "bad")
    with pytest.raises(subevict.PolicyContractError, match="eviction policy bad at step 5: " + message):
        run(small, policy)


def test_exceptions_raised_by_a_policy_propagate(small):
    class Fails(subevict.Policy):
        def observe(self, step, row):
            if step == 3:
                raise KeyError("from the policy")

        def evict(self, step, cache):
            return cache[0]

    with pytest.raises(KeyError, match="from the policy"):
        run(small, Fails())
    with pytest.raises(NotImplementedError):
        run(small, subevict.Policy())
    with pytest.raises(ZeroDivisionError):
        run(small, subevict.ScorePolicy(lambda *a: 1 / 0, "div"))


@pytest.mark.parametrize("policy, message", [
    (object(), "exactly one of evict"),
    (42, "exactly one of evict"),
    (type("Both", (), {"evict": lambda s, i, c: 0, "score": lambda s, *a: 0})(), "got both"),
    (type("NotCallable", (), {"evict": 3})(), "a callable evict method"),
])
def test_malformed_policies_are_refused_before_running(small, policy, message):
    with pytest.raises(subevict.InputError, match=message):
        run(small, policy)


def test_labels_must_be_distinct(small):
    with pytest.raises(subevict.InputError, match="each label once"):
        subevict.simulate(small, [PyH2O(), PyH2O()], budget=5, optimum="none")


class Watcher(subevict.Policy):
    """Evicts the lowest token and records every cache it was asked to evict from."""

    name = "watcher"

    def reset(self, n, k):
        self.asked = []

    def evict(self, step, cache):
        self.asked.append((step, cache.copy()))
        return int(cache[0])


def windowed(window):
    rng = np.random.default_rng(8)
    q = rng.standard_normal((1, 2, 40, 8), dtype=np.float32)
    k = rng.standard_normal((1, 1, 40, 8), dtype=np.float32)
    v = rng.standard_normal((1, 1, 40, 8), dtype=np.float32)
    return subevict.Workload(q, k, v, windows=[window])


def test_on_a_window_layer_the_leaving_token_makes_room_before_evict_is_asked():
    # k = W - 1: the token query i + 1 no longer sees leaves first, so evict is never called and the
    # whole window is kept.
    w, watcher = windowed(8), Watcher()
    [cell] = subevict.simulate(w, watcher, budget=7, optimum="none")
    assert watcher.asked == []
    assert np.all(cell["policies"]["watcher"]["retained_mass"] == 1.0)
    # k = 4 < W - 1: asked exactly where G_i holds k + 1 tokens and none of them leaves the window.
    watcher = Watcher()
    [cell] = subevict.simulate(w, watcher, budget=4, optimum="none")
    assert watcher.asked
    for step, cache in watcher.asked:
        assert len(cache) == 5 and step + 1 - 8 not in cache, step
    evicted = cell["policies"]["watcher"]["evicted"]
    assert [s for s, _ in watcher.asked] == [i for i in range(40) if evicted[i] >= 0]
