from __future__ import annotations

import pytest

from kafkalike.common.topics import InvalidTopicName, collides, validate


@pytest.mark.parametrize("name", ["orders", "a.b_c-d", "x" * 249, "__consumer_offsets"])
def test_legal(name):
    validate(name)


@pytest.mark.parametrize("name,why", [("", "empty"), (".", '"."'), ("..", '"."'), ("x" * 250, "249"),
                                      ("a b", "illegal"), ("ümlaut", "illegal"), ("a/b", "illegal")])
def test_illegal(name, why):
    with pytest.raises(InvalidTopicName, match=why):
        validate(name)


def test_dot_and_underscore_collide():
    assert collides("a.b", "a_b") and not collides("a.b", "a.b") and not collides("ab", "a_b")
