"""The in-domain / out-of-domain split and its scores, on hand-made data with known answers."""
import numpy as np
import pandas as pd
import pytest

from fgpo_core.experiments.companion_report import domain_of, domain_split, id_ood_checkpoints, id_ood_scores
from fgpo_core.experiments.study import Study
from fgpo_core.table import RewardTable

TRAIN = ("cpg", "promoter", "repeat", "splice")


def test_domain_rule():
    assert domain_of("core", "cpg", TRAIN) == "ID"
    assert domain_of("core", "taxonomy", TRAIN) == "OOD"
    assert domain_of("mosaic", "tf_motif", TRAIN) == "OOD"
    assert domain_of("microbe", "promoter", TRAIN) == "OOD"  # another source of sequences


def _table(fams, right_mask, prefix):
    n = len(fams)
    correct = np.zeros((n, 16), dtype=bool)
    correct[:, right_mask] = True
    return RewardTable(correct, 4, np.array(fams), question_ids=np.array([f"{prefix}{i}" for i in range(n)]))


def test_scores_and_checkpoints_pool_questions_by_domain():
    core = _table(["cpg", "cpg", "taxonomy", "tf_motif"], 3, "c")
    microbe = _table(["promoter", "taxonomy"], 3, "m")
    tables = {"core": core, "microbe": microbe}
    split = domain_split(tables, TRAIN)
    assert split.groupby("domain").n.sum().to_dict() == {"ID": 2, "OOD": 4}
    picks = pd.DataFrame({"method": "sft", "seed": 0, "suite": ["core"] * 4 + ["microbe"] * 2,
                          "question_id": ["c0", "c1", "c2", "c3", "m0", "m1"], "mask": [3, 0, 3, 3, 0, 3]})
    st = Study({}, picks, pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), pd.DataFrame())
    sc = id_ood_scores(st, tables, TRAIN).iloc[0]
    assert (sc["ID"], sc["n ID"]) == (50.0, 2)
    assert (sc["OOD"], sc["n OOD"]) == (75.0, 4)
    ck = pd.DataFrame({"method": "sft", "seed": 0, "step": 1, "epoch": 1.0,
                       "suite": ["core", "core", "core", "microbe", "core"],
                       "family": ["cpg", "taxonomy", "tf_motif", "promoter", "all"], "n": [2, 1, 1, 1, 4],
                       "accuracy": [50.0, 100.0, 0.0, 100.0, 50.0], "tools": 1.0})
    st.checkpoints = ck
    c = id_ood_checkpoints(st, TRAIN).iloc[0]
    assert c["ID"] == pytest.approx(50.0) and c["OOD"] == pytest.approx(100 * 2 / 3)
    st.checkpoints = None
    with pytest.raises(ValueError, match="checkpoints"):
        id_ood_checkpoints(st, TRAIN)


def test_the_lm_study_table_tests_and_findings_on_known_picks():
    from fgpo_core.book.findings import lm_companion_findings
    from fgpo_core.experiments.companion_report import (lm_companion_table, lm_companion_tests,
                                                        parse_lm_companion_method)

    assert parse_lm_companion_method("sft20-fgpo80-r16") == ("sft20-fgpo80", 16)
    with pytest.raises(ValueError, match="ARM-rRANK"):
        parse_lm_companion_method("sft")
    # 10 ID core questions (cpg) and 10 OOD (taxonomy); subset 3 is right, anything else wrong
    core = _table(["cpg"] * 10 + ["taxonomy"] * 10, 3, "c")
    tables = {"core": core}
    ids = [f"c{i}" for i in range(20)]
    right = {"sft": [3] * 10 + [0] * 10,              # ID 100, OOD 0
             "fgpo": [0] * 10 + [3] * 5 + [-1] * 5,  # ID 0, OOD 50, 5 format failures
             "sft20-fgpo80": [3] * 8 + [0] * 2 + [3] * 9 + [0]}  # ID 80, OOD 90
    picks = pd.concat([pd.DataFrame({"method": f"{arm}-r{r}", "seed": 0, "suite": "core", "question_id": ids,
                                     "mask": masks})
                       for r in (4, 16) for arm, masks in right.items()], ignore_index=True)
    t = lm_companion_table(picks, tables, TRAIN)
    assert t.loc[("sft", 4), "ID"] == 100.0 and t.loc[("sft", 4), "OOD"] == 0.0
    assert t.loc[("fgpo", 16), "OOD"] == 50.0 and t.loc[("fgpo", 16), "format failures (%)"] == 25.0
    assert t.loc[("sft20-fgpo80", 4), "ID"] == 80.0 and t.loc[("sft20-fgpo80", 4), "n OOD"] == 10
    tests = lm_companion_tests(picks, tables, TRAIN)
    row = tests.loc[(4, "OOD", "sft")]
    assert (row["sft20-fgpo80 only"], row["other only"], row["n"]) == (9, 0, 10)
    assert row["p"] == pytest.approx(2 * 0.5 ** 9)
    assert tests.loc[(16, "ID", "fgpo"), "sft20-fgpo80 only"] == 8
    text = "\n".join(lm_companion_findings(t, tests))
    assert "beats fgpo" in text and "OOD: sft20-fgpo80 beats sft and fgpo" in text
    assert "in 2 of 4 (rank, domain) cells" in text  # OOD at both ranks; ID loses to sft
