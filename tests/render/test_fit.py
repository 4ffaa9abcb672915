"""Text fits its width: wrapped lines hang under their marker, tables split or turn, and no
line is ever wider than the width asked for."""

from hypothesis import given, settings
from hypothesis import strategies as st

from toolcommit.checker.render.fit import NARROWEST, blocks, fit, sequence, table, wrap_line

WORDS = st.text(st.sampled_from("abc xyz+/,-:.[]1"), min_size=0, max_size=300)
WIDTHS = st.integers(min_value=1, max_value=140)


@settings(max_examples=300, deadline=None)
@given(WORDS, WIDTHS)
def test_no_fitted_line_is_wider_than_the_width(text, width):
    for line in fit(text, width).split("\n"):
        assert len(line) <= max(width, NARROWEST)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.lists(st.text("ab cd", max_size=40), min_size=3, max_size=3), min_size=1, max_size=6
    ),
    WIDTHS,
    st.booleans(),
)
def test_no_table_line_is_wider_than_the_width(rows, width, turn):
    for line in table(rows, width, turn=turn):
        assert len(line) <= max(width, NARROWEST)


def test_fitting_changes_nothing_but_where_lines_break():
    text = "  3. " + " ".join(f"word{i}" for i in range(60)) + "\nshort\n"
    out = fit(text, 50)
    assert out.split() == text.split() and out.endswith("short\n")


def test_a_numbered_step_wraps_under_its_text_not_its_number():
    lines = wrap_line("  10. the provider receives key k0's request with fence 1: applied", 40)
    assert lines[1].startswith(" " * 6) and not lines[1].startswith(" " * 7)


def test_a_word_too_long_breaks_at_its_plus_signs_before_anywhere_else():
    label = "naive+" + "+".join(f"knob{i}=option{i}" for i in range(12))
    lines = wrap_line("under " + label, 40)
    assert all(line.rstrip().endswith("+") for line in lines[:-1])
    assert "".join(line.strip() for line in lines) == "under " + label


def test_a_sequence_breaks_between_its_steps():
    steps = [f"step{i}(key=k0, fence={i})" for i in range(8)]
    lines = sequence("  I1 (8 steps): ", steps, " ;", 50, 4)
    joined = " ".join(line.strip() for line in lines)
    assert joined == "I1 (8 steps): " + " ; ".join(steps)
    assert all(line.strip().endswith((")", ") ;")) for line in lines)


def test_a_wide_table_splits_its_columns_beside_the_first():
    rows = [["instance"] + [f"P{i}" for i in range(20)], ["ack_loss"] + ["ok"] * 20]
    lines = table(rows, 40)
    heads = [line for line in lines if line.startswith("instance")]
    assert len(heads) > 1 and all(len(line) <= 40 for line in lines)
    assert sum(line.count("ok") for line in lines) == 20


def test_a_wide_table_turns_when_its_rows_fit_as_columns():
    rows = [
        ["option"] + [f"column number {i}" for i in range(6)],
        ["reject"] + ["HOLDS"] * 6,
        ["replay"] + ["VIOLATED I1"] * 6,
    ]
    lines = table(rows, 60, turn=True)
    assert lines[0].split() == ["option", "reject", "replay"] and len(lines) == 8


def test_a_table_no_column_arrangement_fits_is_one_block_per_row():
    rows = [["failure class", "common bug"], ["Ack loss", "VIOLATED I1 " * 8]]
    assert blocks(rows, 40)[0] == "Ack loss" and table(rows, 40)[0] == "Ack loss"
    assert table(rows, 40)[1].startswith("  common bug: VIOLATED")
