"""The chapters' plain-words readings follow the numbers they report."""
import numpy as np
import pandas as pd

from fgpo_core.book.findings import drift_sentence, mass_left_candidates, significance_phrase


def test_significance_phrase_follows_the_p_value():
    assert "not significant" in significance_phrase(0.2)
    assert "significant at 5%" in significance_phrase(0.01)


def test_drift_reading():
    up_leak = pd.DataFrame({"J": [0.1, 0.3], "p_gen_valid": [0.1, 0.001], "format_failures": [0.0, 100.0]})
    up_kept = pd.DataFrame({"J": [0.1, 0.3], "p_gen_valid": [0.1, 0.09], "format_failures": [0.0, 0.0]})
    assert mass_left_candidates(up_leak) and not mass_left_candidates(up_kept)
    assert "from 0.1 to 0.001" in drift_sentence("lr=1", up_leak) and "0% to 100%" in drift_sentence("lr=1", up_leak)


def test_past_enumeration_findings_say_what_the_numbers_say():
    from fgpo_core.book.findings import past_enumeration_findings

    lib = pd.DataFrame({"oracle": [80.0, 90.0], "best_fixed": [55.0, 60.0], "all_tools": [53.0, 50.0]}, index=[4, 12])
    effects = pd.DataFrame({"marginal": [2.0, -1.5]}, index=["splice", "thermo"])
    budget = pd.DataFrame({"family": ["fgpo", "shortlist-top", "grpo"], "accuracy": [60.0, 55.0, 50.0],
                           "accuracy_sd": [1.0, 1.0, 1.0], "tools": [1.0, 1.0, 2.0],
                           "calls_per_question": [4096.0, 40.0, 30.0]}, index=["fgpo", "shortlist-top16", "grpo"])
    ve = pd.DataFrame({"rival": ["fgpo"], "calls per question": [40.0], "rival's calls per question": [4096.0],
                       "difference (points)": [-5.0], "median p": [0.001], "seeds with p < 0.05": ["3 of 3"]},
                      index=["shortlist-top16"])
    vg = pd.DataFrame({"rival": ["grpo"], "difference (points)": [5.0], "median p": [0.2]}, index=["shortlist-top16"])
    text = "\n".join(past_enumeration_findings(lib, effects, {12: budget}, {12: ve}, {12: vg}, {}, {}))
    assert "10.0 points below the best fixed subset" in text and "thermo (-1.5)" in text and "splice" not in text
    assert "pays 1% of those calls and loses 5.0 points" in text and "a real loss" in text
    assert "0 of 1 methods win" in text and "GRPO's runs read" not in text
    two = pd.concat([budget, budget.loc[["grpo"]].rename(index={"grpo": "grpo-e80"}).assign(calls_per_question=40.0)])
    text = "\n".join(past_enumeration_findings(lib, effects, {12: two}, {12: ve}, {12: vg}, {}, {}))
    assert "GRPO 30.0, GRPO (80 epochs) 40.0" in text and "barely buy more" in text
    ve.loc["shortlist-top16", "median p"] = 0.3
    text = "\n".join(past_enumeration_findings(lib, effects.abs(), {12: budget}, {12: ve}, {12: vg}, {}, {}))
    assert "no difference the test can see" in text and "No tool is a distractor" in text
    # calls under 1% keep a digit; each method's own last epoch, though GRPO's longer runs pad the others with NaN
    ve.loc["shortlist-top16", "calls per question"] = 10.0
    seen = pd.DataFrame({"shortlist-top16": [40.0, 70.0, None, None], "grpo": [1.0, 2.0, 3.0, 4.0]}, index=[1, 2, 3, 4])
    dead = pd.DataFrame({"grpo": [47.0, 97.0, None]}, index=[1, 2, 3])
    text = "\n".join(past_enumeration_findings(lib, effects, {12: budget}, {12: ve}, {12: vg}, {12: seen}, {12: dead}))
    assert "pays 0.2% of those calls" in text and "70% (Shortlist (top) K=16)" in text
    assert "47% in its first epoch, 97% in its last" in text


def test_lm_table_findings_follow_the_rows_that_landed():
    import numpy as np

    from fgpo_core.book.findings import lm_table_findings

    acc = pd.DataFrame({"core": [30.0, 50.0, 53.0, 51.0, 49.0, 80.0]},
                       index=["No-Tool", "All-Tools", "BestFixed*", "Warm-up", "FGPO + format term", "Oracle"])
    tests = pd.DataFrame({"a_only": [10], "b_only": [30], "p_value": [0.001], "against": ["Warm-up"]},
                         index=["FGPO + format term"])
    man = {"FGPO + format term": {"dev": [{"step": 0}], "best_step": 0}}
    out = lm_table_findings(acc, {"FGPO + format term": 0.0}, tests, man, ["FGPO", "GRPO"])
    assert out[0].startswith("- **Still to come.** FGPO, GRPO have not landed yet; their rows")
    one = lm_table_findings(acc, {"FGPO + format term": 0.0}, tests, man, ["GRPO"])
    assert one[0].startswith("- **Still to come.** GRPO has not landed yet; its row appears")
    fmt = next(b for b in out if b.startswith("- **FGPO + format term**"))
    assert "-2.0 points from the warm-up" in fmt and "-1.0 from All-Tools" in fmt and "its row is the warm-up's" in fmt
    assert "GenomeQA" not in fmt  # the paper has no such row
    assert "By free generation" not in fmt  # no later dev evaluation to report
    man["GRPO"] = {"objective": "grpo", "config": {"prompts_per_step": 16}, "best_step": 0,
                   "dev": [{"step": 0, "accuracy": 51.5, "tools": 3.64}, {"step": 8, "accuracy": 45.0, "tools": 3.1},
                           {"step": 16, "accuracy": 47.0, "tools": 3.0}]}
    with_grpo = acc.copy()
    with_grpo.loc["GRPO"] = [48.0]
    g = lm_table_findings(with_grpo, {}, tests.iloc[:0], man, [])
    g = next(b for b in g if b.startswith("- **GRPO**"))
    assert "its row is the warm-up's. By free generation on dev it scored 51.5% at step 0 and 45.0-47.0% at " \
           "steps 8, 16, with 3.64 tools per question at the start and 3.00 at its last evaluation." in g
    pair = next(b for b in out if "question by question" in b)
    assert "Warm-up right and FGPO + format term wrong on 10" in pair and "significant at 5%" in pair
    assert not any("paper's comparison" in b for b in out)
    acc.loc["FGPO"], acc.loc["GRPO"] = [55.0], [56.0]
    man["FGPO"] = {"dev": [{"step": 0}, {"step": 8}], "best_step": 8}
    readings = pd.DataFrame({"generation": [55.0, 49.0], "scoring": [57.0, 49.5], "constrained": [55.5, 49.0]},
                            index=["FGPO", "FGPO + format term"])
    domains = pd.DataFrame({"ID": [50.0, 60.0], "OOD": [70.0, 55.0]}, index=["Warm-up", "FGPO"])
    out = lm_table_findings(acc, {}, tests.iloc[:0], man, [], readings, domains)
    assert any("50.0% in domain and 70.0% out of domain" in b and "FGPO +10.0 ID, -15.0 OOD" in b for b in out)
    fg = next(b for b in out if b.startswith("- **FGPO**"))
    assert "the paper: 52.62% on GenomeQA" in fg and "warm-up" in fg and "its row is the warm-up's" not in fg
    assert any("at most 2.0 points on core (FGPO)" in b for b in out)
    head = lm_table_findings(acc, {}, tests.iloc[:0], man, [], routing={"accuracy": 59.0, "tools": 1.5})
    assert any("scores 59.0% on core with 1.50 tools" in b and "+9.0 points from All-Tools" in b
               and "(GRPO) is at 56.0%" in b for b in head)
    same = lm_table_findings(acc, {}, tests.iloc[:0], man, [], readings.iloc[:1])
    assert any("differ by 2.0 points on core for every selector shown" in b for b in same)
    assert any("-1.0 points here" in b and "not the paper's sign" in b for b in out)
    assert not any("Still to come" in b for b in out) and np.isfinite(acc.values).all()
    assert not any("named tools" in b for b in out)
    acc.loc["FGPO (named tools)"], acc.loc["Tools w/ Desc"] = [52.5], [40.0]
    named = next(b for b in lm_table_findings(acc, {}, tests.iloc[:0], man, []) if "named tools" in b)
    assert "52.5% on core against anonymous FGPO's 55.0% (-2.5 points; the paper: 51.67% named" in named
    assert "+12.5 points from its start" in named and "(Tools w/ Desc, 40.0%)" in named


def test_grpo_dead_sentence_reports_trls_count_and_the_exact_recount():
    from fgpo_core.book.findings import grpo_dead_sentence

    dead = pd.DataFrame({"step": [1, 2, 3, 4], "trl": [0.25, 0.5, 0.5, 0.75],
                         "recount": [np.nan, np.nan, 0.5, 1.0]})
    s = grpo_dead_sentence(dead, 42, 87.5)
    assert "from **25%** at its first step to **75%** at its last (mean 50% over 4 steps)" in s
    assert "over steps 3-4, it averaged **75%** against TRL's 62% on the same steps" in s
    assert "above TRL's count on 1 of the 2 steps" in s and s.endswith("telemetry: 42% to 87.5%.")
    same = grpo_dead_sentence(dead.assign(recount=dead.trl), 42, 87.5)
    assert "over steps 1-4" in same and "equal to it at every step" in same
    assert "counted exactly" not in grpo_dead_sentence(dead.assign(recount=np.nan), 42, 87.5)
