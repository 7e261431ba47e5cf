import numpy as np
import pytest

from fgpo_core.core.subsets import FORMAT_FAILURE, ActionSpace


@pytest.mark.parametrize("n", [1, 3, 4, 5])
def test_every_subset_round_trips(n):
    space = ActionSpace(n)
    assert len(space) == 2**n
    seen = set()
    for m in space:
        tools = space.tools(m)
        assert space.mask(tools) == m
        s = space.to_string(m)
        assert space.parse(s).mask == m
        assert space.size(m) == len(tools) == space.sizes[m]
        assert list(np.flatnonzero(space.membership[m])) == list(tools)
        seen.add(s)
    assert len(seen) == 2**n


def test_policy_strings_match_the_paper():
    space = ActionSpace(4)
    assert space.to_string(0) == "<answer></answer>"
    assert space.to_string(0b1010) == "<answer>1,3</answer>"
    assert space.label(0) == "none" and space.label(0b0101) == "T1+T3"


@pytest.mark.parametrize(
    "text,mask",
    [
        ("<answer>3,1</answer>", 0b1010),
        ("I will use <answer> 0 , 2 </answer> because", 0b0101),
        ("<answer>\n</answer>", 0),
        ("<answer>2</answer><answer>0</answer>", 0b0100),
    ],
)
def test_parse_accepts_reasonable_forms(text, mask):
    assert ActionSpace(4).parse(text).mask == mask


@pytest.mark.parametrize(
    "text,reason",
    [
        ("0,2", "no <answer>"),
        ("<answer>0,2", "no <answer>"),
        ("<answer>4</answer>", "outside"),
        ("<answer>1,1</answer>", "repeated"),
        ("<answer>a</answer>", "not a tool index"),
        ("<answer>-1</answer>", "not a tool index"),
        ("<answer>0,,1</answer>", "not a tool index"),
        (None, "not str"),
    ],
)
def test_format_failures_are_counted_not_raised(text, reason):
    parsed = ActionSpace(4).parse(text)
    assert not parsed.ok and parsed.mask == FORMAT_FAILURE and reason in parsed.error


def test_bad_construction_and_masks():
    with pytest.raises(ValueError):
        ActionSpace(0)
    assert ActionSpace(12).n_actions == 4096
    with pytest.raises(ValueError, match="between 1 and 12"):
        ActionSpace(13)
    with pytest.raises(TypeError):
        ActionSpace(2.0)
    space = ActionSpace(3)
    with pytest.raises(ValueError):
        space.tools(8)
    with pytest.raises(ValueError):
        space.mask([0, 0])
    with pytest.raises(ValueError):
        space.mask([3])
