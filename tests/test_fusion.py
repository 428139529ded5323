"""The pure ranking pieces of search by meaning: score fusion and conversation neighbours."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentrecall.retrieval.fusion import Fused, fuse, min_max, scaled_by_best
from agentrecall.retrieval.neighbours import (
    adjacent,
    anchors_for,
    conversation_ranking,
    expand,
    smooth,
)


def test_min_max_scales_each_list_to_zero_one() -> None:
    assert min_max([("a", 8.0), ("b", 4.0), ("c", 2.0)]) == {"a": 1.0, "b": 1 / 3, "c": 0.0}
    assert min_max([("a", 0.3)]) == {"a": 1.0}
    assert min_max([("a", 2.0), ("b", 2.0)]) == {"a": 1.0, "b": 1.0}
    assert min_max([("a", 1.0), ("a", 5.0), ("b", 3.0)]) == {"a": 0.0, "b": 1.0}
    assert min_max([]) == {}


def test_min_max_with_a_least_span_keeps_small_differences_small() -> None:
    assert min_max([("a", 0.5), ("b", 0.2)], least_span=0.1) == {"a": 1.0, "b": 0.0}
    close = min_max([("a", 0.089), ("b", 0.079)], least_span=0.1)
    assert close["a"] == 1.0 and close["b"] == pytest.approx(0.9)
    assert min_max([("a", 0.3)], least_span=0.1) == {"a": 1.0}


def test_semantic_noise_does_not_outweigh_a_keyword_difference() -> None:
    # Cosine similarities a hundredth apart (int8 storage moves them that much) leave the
    # ranking to the keyword list.
    fused = fuse([("a", 2.0), ("b", 1.2), ("c", 1.0)], [("b", 0.090), ("c", 0.085), ("a", 0.080)])
    assert [hit.key for hit in fused] == ["a", "b", "c"]


def test_scaled_by_best_divides_by_the_best_score() -> None:
    assert scaled_by_best([("a", 8.0), ("b", 4.0), ("c", 2.0)]) == {"a": 1.0, "b": 0.5, "c": 0.25}
    assert scaled_by_best([("a", 0.3)]) == {"a": 1.0}
    assert scaled_by_best([("a", 0.0), ("b", 0.0)]) == {"a": 1.0, "b": 1.0}
    assert scaled_by_best([("a", 1.0), ("a", 5.0), ("b", 4.0)]) == {"a": 0.25, "b": 1.0}
    assert scaled_by_best([("a", 2.0), ("b", -1.0)]) == {"a": 1.0, "b": 0.0}
    assert scaled_by_best([]) == {}


def test_fuse_weights_normalised_parts_and_keeps_raw_ones() -> None:
    fused = fuse([("a", 9.0), ("b", 3.0)], [("b", 0.8), ("c", 0.4), ("a", 0.2)])
    # Keyword scores are divided by the best (a 1, b 1/3), semantic ones min-max normalised
    # (b 1, c 1/3, a 0).
    assert [(hit.key, hit.keyword, hit.semantic) for hit in fused] == [
        ("b", 3.0, 0.8),
        ("a", 9.0, 0.2),
        ("c", None, 0.4),
    ]
    assert [hit.score for hit in fused] == pytest.approx([0.5 / 3 + 0.5, 0.5, 0.5 / 3])
    assert isinstance(fused[0], Fused)
    # Equal fused scores keep the order of first appearance: keyword list first.
    assert [hit.key for hit in fuse([("x", 1.0)], [("y", 1.0)])] == ["x", "y"]
    assert fuse([], []) == []


def test_near_equal_keyword_scores_leave_the_semantic_ranking_to_decide() -> None:
    # Two memories sharing one common word with the query: BM25 scores them nearly alike, and
    # the one whose meaning matches must come first.
    fused = fuse([("tea", 0.185), ("seat", 0.180)], [("seat", 0.53), ("tea", 0.18)])
    assert [hit.key for hit in fused] == ["seat", "tea"]
    assert fused[0].score > 0.9 > 0.6 > fused[1].score


def test_fuse_weight_moves_the_balance_and_is_checked() -> None:
    keyword, semantic = [("k", 2.0), ("s", 1.0)], [("s", 0.9), ("k", 0.1)]
    assert fuse(keyword, semantic, keyword_weight=1.0)[0].key == "k"
    assert fuse(keyword, semantic, keyword_weight=0.0)[0].key == "s"
    with pytest.raises(ValueError, match="keyword_weight"):
        fuse(keyword, semantic, keyword_weight=1.5)


scored_lists = st.lists(
    st.tuples(st.sampled_from("abcdefgh"), st.floats(-5, 5, allow_nan=False)), max_size=8
)


@given(scored_lists, scored_lists)
def test_fused_scores_are_within_zero_one_and_sorted(
    keyword: list[tuple[str, float]], semantic: list[tuple[str, float]]
) -> None:
    fused = fuse(keyword, semantic)
    assert {hit.key for hit in fused} == {key for key, _ in keyword + semantic}
    assert all(-1e-9 <= hit.score <= 1 + 1e-9 for hit in fused)
    assert [hit.score for hit in fused] == sorted((hit.score for hit in fused), reverse=True)


def test_adjacent_pairs_nearest_rows_of_one_session_within_reach() -> None:
    rows = [
        (1, "a", "s1"),
        (2, "b", "s1"),
        (3, "x", "s2"),  # another session between two turns of s1
        (4, "c", "s1"),
        (20, "d", "s1"),  # too far from c
        (5, "lone", None),
    ]
    assert adjacent(rows, reach=8, window=1) == {
        "a": ("b",),
        "b": ("a", "c"),
        "c": ("b",),
    }
    assert adjacent(rows, reach=1, window=1) == {"a": ("b",), "b": ("a",)}


def test_a_wider_window_takes_the_nearest_first_within_a_run_of_the_session() -> None:
    rows = [(i, key, "s1") for i, key in enumerate("abcde")]
    rows += [(5, "x", "s2"), (30, "far", "s1")]
    found = adjacent(rows, reach=8, window=2)
    assert found["c"] == ("b", "d", "a", "e")
    assert found["a"] == ("b", "c")
    assert found["e"] == ("d", "c")
    # A gap wider than the reach ends the run: "far" is nobody's neighbour.
    assert "far" not in found
    assert adjacent(rows, window=3)["a"] == ("b", "c", "d")


def test_smooth_adds_a_share_of_the_best_neighbour() -> None:
    neighbours = {"a": ("b",), "b": ("a", "c"), "c": ("b",)}
    smoothed = smooth({"a": 1.0, "c": 0.2}, neighbours, weight=0.5)
    assert smoothed == {"a": 1.0, "b": 0.5, "c": 0.2}
    assert smooth({"a": 1.0}, {}, weight=0.5) == {"a": 1.0}


def test_expand_fills_with_the_anchors_neighbours_first() -> None:
    neighbours = {"a": ("z", "b"), "c": ("y",)}
    ranked = ["a", "c", "d", "e", "f"]
    assert expand(ranked, neighbours, 4, anchors=2) == ["a", "c", "z", "b"]
    assert expand(ranked, neighbours, 6, anchors=3) == ["a", "c", "d", "z", "b", "y"]
    assert expand(ranked, neighbours, 4, anchors=0) == ["a", "c", "d", "e"]
    assert expand(["a", "b"], {"a": ("b",)}, 3) == ["a", "b"]
    assert expand(["a"], neighbours, 1) == ["a"]
    # By default 70% of the places are anchors': 7 of 10, so 3 places go to neighbours.
    many = [f"k{i}" for i in range(20)]
    found = expand(many, {"k0": ("n1", "n2", "n3", "n4")}, 10)
    assert found == [*many[:7], "n1", "n2", "n3"]


def test_anchors_are_a_share_of_the_results_rounded_down_and_at_least_one() -> None:
    assert [anchors_for(limit) for limit in (1, 2, 3, 10, 100)] == [1, 1, 2, 7, 70]


def test_conversation_ranking_orders_by_smoothed_score_and_brings_in_neighbours() -> None:
    # a, b and c are one session, x belongs to none, d is alone in its own.
    rows = [(1, "a", "s1"), (2, "b", "s1"), (3, "x", None), (4, "c", "s1"), (5, "d", "s2")]
    ranked = conversation_ranking({"a": 1.0, "d": 0.5}, rows, 4)
    assert ranked == [("a", 1.0), ("d", 0.5), ("b", pytest.approx(0.3)), ("c", pytest.approx(0.3))]
    # Two of three places are anchors': a and d; a's nearest neighbour takes the third.
    assert [key for key, _ in conversation_ranking({"a": 1.0, "d": 0.5}, rows, 3)] == [
        "a",
        "d",
        "b",
    ]
    # A found memory next to a better one overtakes a lone one.
    helped = conversation_ranking({"a": 1.0, "b": 0.4, "d": 0.5}, rows, 2)
    assert helped == [("a", pytest.approx(1.12)), ("b", pytest.approx(0.7))]
    assert conversation_ranking({}, rows, 3) == []
