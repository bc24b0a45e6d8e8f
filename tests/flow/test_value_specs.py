"""{value} specs the checks accept write every number as a text of its own; the ones they refuse really collide
or fail. Each refusal names the spec and shows the numbers it writes alike."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from django_segment_seq.db.columns import BIGINT_MAX
from django_segment_seq.flow.formats import FlowFormat, value_spec_problem, width_cap
from tests.fields.test_flow_checks import check_ids

FILLS = st.sampled_from(["", "0", "1", "7", "9", "a", "f", "F", "-", "+", " ", "_", ",", "x", "*"])
ALIGNS = st.sampled_from(["", "<", ">", "=", "^"])
TYPES = st.sampled_from(["", "d", "n", "x", "X", "o", "b", "c", "e", "E", "f", "F", "g", "G", "%"])


@st.composite
def specs(draw: st.DrawFn) -> str:
    """Format specs of the mini-language for an int, valid or not."""
    align = draw(ALIGNS)
    fill = draw(FILLS) if align else ""
    sign = draw(st.sampled_from(["", "+", "-", " "]))
    alternate = draw(st.sampled_from(["", "#"]))
    zero = draw(st.sampled_from(["", "0"]))
    width = draw(st.sampled_from(["", "1", "3", "4", "6", "8", "12", "20"]))
    grouping = draw(st.sampled_from(["", ",", "_"]))
    precision = draw(st.sampled_from(["", "", "", ".2"]))
    return f"{fill}{align}{sign}{alternate}{zero}{width}{grouping}{precision}{draw(TYPES)}"


def valid(spec: str) -> bool:
    try:
        format(1, spec)
    except ValueError:
        return False
    return True


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=specs(), numbers=st.lists(st.integers(-(10**6), BIGINT_MAX), min_size=2, max_size=40, unique=True))
def test_accepted_specs_write_distinct_numbers_as_distinct_texts(spec, numbers):
    if not valid(spec) or value_spec_problem(spec) is not None:
        return
    cap = width_cap(spec)
    numbers = [number for number in numbers if cap is None or number <= cap]
    texts = [format(number, spec) for number in numbers]
    assert len(set(texts)) == len(texts), f"{spec!r} wrote {numbers} as {texts}"


@settings(max_examples=400, deadline=None)
@given(spec=specs())
def test_refused_specs_really_collide_or_fail(spec):
    if not valid(spec):
        return
    problem = value_spec_problem(spec)
    if problem is None:
        return
    assert f"{{value:{spec}}}" in problem
    shown = problem.rsplit("; ", 1)[1]
    if shown == "large numbers lose digits":  # a float presentation: exact only below 2**53
        assert spec[-1] in "eEfFgG%"
    elif "cannot be written" in shown:
        number = int(shown.split(" ", 1)[0])
        with pytest.raises((ValueError, OverflowError)):
            format(number, spec)
    else:
        first, rest = shown.split(" and ", 1)
        second = rest.split(" are both written ", 1)[0]
        assert format(int(first), spec) == format(int(second), spec) and int(first) != int(second)


@pytest.mark.parametrize("spec", ["0<4", ".2e", "g", "1>4", "a>4x", "->4", "0^5", "%", "9=+6", "f"])
def test_specs_that_lose_numbers_are_refused_with_an_example(spec):
    problem = value_spec_problem(spec)
    assert problem is not None and "are both written" in problem
    first, second = problem.rsplit("; ", 1)[1].split(" are both written ")[0].split(" and ")
    assert int(first) != int(second) and format(int(first), spec) == format(int(second), spec)
    assert check_ids(format=f"T{{value:{spec}}}") == ["django_segment_seq.E035"]


def test_the_issues_example_is_refused():
    """{value:0<4} wrote T1000 for 1, 10, 100 and 1000."""
    assert "1 and 10 are both written '1000'" in value_spec_problem("0<4")


@pytest.mark.parametrize(
    "spec", ["", "d", "06d", "0>6", "0=+6", ">8", "_<8", "*^9", ",", "012_x", "#b", "+08,d", " d", "0<1", "1>1"]
)
def test_one_to_one_specs_pass(spec):
    assert value_spec_problem(spec) is None
    assert check_ids(format=f"T{{value:{spec}}}") == []


def test_a_character_presentation_is_a_check_error_not_a_crash():
    """{value:c} once crashed manage.py check itself while working out the default max_length."""
    assert "cannot be written" in value_spec_problem("c")
    assert FlowFormat("T{value:c}").default_max_length() >= 32
    assert check_ids(format="T{value:c}") == ["django_segment_seq.E035"]


def test_a_grouped_zero_padded_spec_caps_at_its_real_width():
    """{value:08,d} writes 0 as '0,000,000' (9 characters): its cap is 9,999,999, not -1."""
    assert width_cap("08,d") == 9_999_999
    assert FlowFormat("T{value:08,d}").cap == 9_999_999
    assert check_ids(format="T{value:08,d}") == []


@pytest.mark.parametrize(
    "format_, expected",
    [
        ("{instance[kind]}{value}", ["django_segment_seq.E034"]),  # indexing: a TypeError at every save
        ("{instance.kind.upper}{value}", ["django_segment_seq.E034"]),  # through a plain attribute
        ("{instance.kind.nope.deeper}{value}", ["django_segment_seq.E034"]),
        ("{instance.nope.kind}{value}", ["django_segment_seq.E019"]),
        ("{instance.nope}{value}", ["django_segment_seq.E019"]),
    ],
)
def test_instance_paths_the_check_cannot_follow_are_refused(format_, expected):
    assert check_ids(format=format_) == expected


def test_nested_paths_through_foreign_keys_are_followed():
    """{instance.company.code} reads the related row; a misspelling at the second step is E019."""
    assert _related_model_checks("{instance.company.code}{value}") == []
    messages = _related_model_checks("{instance.company.cdoe}{value}")
    assert [m.id for m in messages] == ["django_segment_seq.E019"] and "'cdoe'" in messages[0].msg


def _related_model_checks(format_: str) -> list:
    from django.db import models
    from django.test.utils import isolate_apps

    from django_segment_seq import SequenceField
    from tests.testapp.models import Company

    @isolate_apps("tests.testapp")
    def build():
        class Model(models.Model):
            company = models.ForeignKey(Company, on_delete=models.CASCADE)
            number = SequenceField("nested", format=format_)

            class Meta:
                app_label = "testapp"

        return [m for m in Model._meta.get_field("number").check() if m.id.startswith("django_segment_seq")]

    return build()
