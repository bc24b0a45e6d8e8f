"""The block arithmetic on its own: limits, wrap-around, exhaustion, for any row."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from django_segment_seq.allocator.blocks import Block, Row, Unused, next_block, unused_run
from django_segment_seq.db.columns import BIGINT_MAX
from django_segment_seq.exceptions import SequenceExhausted, SequenceMisconfigured


def row(value=0, step=10, min_value=1, max_value=100, cycle=False):
    return Row(value, step, min_value, max_value, cycle)


def test_first_block_starts_at_min_value():
    assert next_block("s", row(value=0)) == Block(1, 10)
    assert next_block("s", row(value=99, min_value=100, max_value=1000)) == Block(100, 109)


def test_block_never_crosses_max_value():
    assert next_block("s", row(value=95)) == Block(96, 100)


def test_exhausted_without_cycle_names_sequence_and_limit():
    with pytest.raises(SequenceExhausted, match=r"'s'.*max_value 100"):
        next_block("s", row(value=100))


def test_wraps_to_min_value_with_cycle():
    assert next_block("s", row(value=100, cycle=True)) == Block(1, 10)


def test_wanted_larger_than_step_is_one_contiguous_block():
    assert next_block("s", row(value=0), wanted=55) == Block(1, 55)


def test_wanted_more_than_left_is_exhausted_not_truncated():
    with pytest.raises(SequenceExhausted, match="only 10 remain"):
        next_block("s", row(value=90), wanted=20)


def test_wanted_more_than_whole_span_with_cycle_is_refused():
    with pytest.raises(SequenceMisconfigured, match="whole range holds 100"):
        next_block("s", row(value=0, cycle=True), wanted=101)


@pytest.mark.parametrize(
    "bad, message",
    [(row(step=0), "step is 0"), (row(min_value=10, max_value=5), "greater than max_value")],
)
def test_contradictory_rows_are_refused(bad, message):
    with pytest.raises(SequenceMisconfigured, match=message):
        next_block("s", bad)


def test_count_below_one_is_refused():
    with pytest.raises(ValueError, match="at least 1"):
        next_block("s", row(), wanted=0)


rows = st.builds(
    Row,
    value=st.integers(-1000, 1000),
    step=st.integers(1, 300),
    min_value=st.integers(-500, 500),
    max_value=st.integers(-500, 1500),
    cycle=st.booleans(),
).filter(lambda r: r.min_value <= r.max_value)


@given(rows, st.integers(1, 400))
def test_block_is_inside_limits_and_after_value_unless_wrapped(r, wanted):
    try:
        block = next_block("s", r, wanted)
    except (SequenceExhausted, SequenceMisconfigured):
        assert r.max_value - max(r.value + 1, r.min_value) + 1 < wanted
        return
    assert r.min_value <= block.first <= block.last <= r.max_value
    assert block.size >= wanted
    assert block.size <= max(r.step, wanted)
    if block.first != r.min_value or r.value + 1 >= r.min_value:
        wrapped = r.cycle and block.first == r.min_value and r.value + 1 > r.min_value
        assert wrapped or block.first == max(r.value + 1, r.min_value)


@given(rows.filter(lambda r: not r.cycle and r.value <= r.max_value), st.integers(1, 50))
def test_successive_blocks_never_overlap(r, wanted):
    seen: set[int] = set()
    for _ in range(20):
        try:
            block = next_block("s", r, wanted)
        except SequenceExhausted:
            break
        numbers = set(range(block.first, block.last + 1))
        assert not numbers & seen
        seen |= numbers
        r = r._replace(value=block.last)


def test_top_of_bigint_range():
    assert next_block("s", row(value=BIGINT_MAX - 3, max_value=BIGINT_MAX)) == Block(BIGINT_MAX - 2, BIGINT_MAX)


@given(rows.filter(lambda r: r.value > r.max_value), st.integers(1, 400))
def test_value_above_max_value_is_refused_whatever_the_cycle(r, wanted):
    with pytest.raises(SequenceMisconfigured, match=f"value {r.value} is above max_value {r.max_value}"):
        next_block("s", r, wanted)


@given(
    rows.filter(lambda r: r.value <= r.max_value),
    st.lists(st.integers(1, 120), min_size=1, max_size=60),
)
def test_allocations_in_a_row_wrap_and_exhaust_only_when_they_must(r, wanted_list):
    """A table moved by successive blocks: no number twice within one cycle; a wrap or exhaustion only when
    fewer than `wanted` numbers are left; after a wrap the block starts at min_value."""
    in_cycle: set[int] = set()
    for wanted in wanted_list:
        left = r.max_value - max(r.value + 1, r.min_value) + 1
        try:
            block = next_block("s", r, wanted)
        except SequenceExhausted:
            assert not r.cycle and left < wanted
            return
        except SequenceMisconfigured:
            assert r.cycle and r.max_value - r.min_value + 1 < wanted
            return
        numbers = set(range(block.first, block.last + 1))
        if left < wanted:  # wrapped
            assert r.cycle and block.first == r.min_value
            in_cycle = set()
        else:
            assert block.first == max(r.value + 1, r.min_value)
        assert not numbers & in_cycle
        assert r.min_value <= block.first <= block.last <= r.max_value
        assert wanted <= block.size <= max(r.step, wanted)
        in_cycle |= numbers
        r = r._replace(value=block.last)


@given(st.integers(1, 10**6), st.integers(0, 10**6), st.integers(1, 2**64))
def test_blocks_near_the_top_of_bigint_never_overflow(step, below_top, wanted):
    r = Row(BIGINT_MAX - below_top, step, 1, BIGINT_MAX, False)
    try:
        block = next_block("s", r, wanted)
    except SequenceExhausted as exc:
        assert below_top < wanted
        assert "'s'" in str(exc)
        return
    assert block.last <= BIGINT_MAX and block.size >= wanted


# Give-back at a clean exit: what may go back, and a model of processes that never repeats a number.


def test_unused_rest_of_the_current_block_goes_back():
    assert unused_run(28, Block(1, 1000), 1, None, None) == Unused(28, 1000, 1)
    assert unused_run(1001, Block(1, 1000), 1, None, None) is None  # all used
    assert unused_run(1, Block(1, 0), None, None, None) is None  # nothing cached


def test_a_pending_block_right_after_the_current_one_goes_back_with_it():
    assert unused_run(28, Block(1, 100), 1, Block(101, 200), 2) == Unused(28, 200, 2)
    # Wrapped around (cycle): still the very next write, so both go back.
    assert unused_run(95, Block(91, 100), 7, Block(1, 10), 8) == Unused(95, 10, 8)


def test_a_pending_block_after_another_process_goes_back_alone():
    assert unused_run(28, Block(1, 100), 1, Block(201, 300), 3) == Unused(201, 300, 3)
    assert unused_run(101, Block(1, 100), 1, Block(101, 200), 2) == Unused(101, 200, 2)  # current used up


@given(st.lists(st.tuples(st.integers(0, 2), st.sampled_from("tpe"), st.integers(1, 25)), max_size=80))
def test_processes_giving_back_never_repeat_a_number(actions):
    """Three processes take numbers, prefetch and exit in any order; give-backs follow unused_run."""
    value, version = 0, 0
    handed: list[int] = []
    procs = [{"cur": Block(1, 0), "ver": None, "next": 1, "pend": None, "pver": None} for _ in range(3)]

    def allocate() -> tuple[Block, int]:
        nonlocal value, version
        block = next_block("s", Row(value, 10, 1, BIGINT_MAX, False, version))
        value, version = block.last, version + 1
        return block, version

    for who, what, count in actions:
        p = procs[who]
        if what == "t":
            for _ in range(count):
                if p["next"] > p["cur"].last:
                    if p["pend"] is not None:
                        p["cur"], p["ver"], p["pend"], p["pver"] = p["pend"], p["pver"], None, None
                    else:
                        p["cur"], p["ver"] = allocate()
                    p["next"] = p["cur"].first
                handed.append(p["next"])
                p["next"] += 1
        elif what == "p" and p["pend"] is None:
            p["pend"], p["pver"] = allocate()
        elif what == "e":
            run = unused_run(p["next"], p["cur"], p["ver"], p["pend"], p["pver"])
            if run is not None and (value, version) == (run.value, run.version):
                value, version = run.first - 1, version + 1
            p.update(cur=Block(1, 0), ver=None, next=1, pend=None, pver=None)
    assert len(handed) == len(set(handed))
