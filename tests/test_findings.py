"""The chapters' plain-words readings follow the numbers they report."""
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
