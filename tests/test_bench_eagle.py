"""``bench/eagle.py``'s MAL by category: steps pooled within a category, each drafter's longest chain and its tree."""
from types import SimpleNamespace

from bench.eagle import by_category


def test_mal_by_category_pools_steps_and_shows_the_longest_chain_and_the_tree(capsys):
    configs = [("ar", "ar", 1), ("h", "fixed", 2), ("h", "fixed", 6), ("h", "eagle2", 1)]

    def gen(*lengths):
        return SimpleNamespace(accept_lengths=list(lengths))

    gens = {configs[0]: [gen(1), gen(1), gen(1)],
            configs[1]: [gen(9), gen(9), gen(9)],                   # a shorter chain: not shown
            configs[2]: [gen(1, 3), gen(2), gen(6)],                # math: (1 + 3 + 2) / 3 steps; qa: 6
            configs[3]: [gen(4), gen(2, 2), gen(5)]}
    by_category(configs, gens, ["math", "math", "qa"])
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "## sample: MAL by category (h fixed γ=6, h eagle2)"
    assert out[1].split() == ["math", "2.00", "2.67"] and out[2].split() == ["qa", "6.00", "5.00"]


def test_mal_ratio_pools_each_side_and_resamples_questions_together():
    from bench.eagle import mal_ratio

    def gen(*lengths):
        return SimpleNamespace(accept_lengths=list(lengths))

    a = [gen(3, 3), gen(2), gen(4, 2, 3)]              # MAL 17 / 6
    b = [gen(1, 2), gen(2), gen(1, 1, 1)]              # MAL 8 / 6
    r, lo, hi = mal_ratio(a, b)
    assert abs(r - (17 / 6) / (8 / 6)) < 1e-12 and lo <= r <= hi and lo < hi
    assert mal_ratio(a, a) == (1.0, 1.0, 1.0)          # paired: the same questions on both sides every resample
