"""`toolcommit export`: the model in another tool's format (Spin's counts: tests/engines)."""

import pytest

from toolcommit.checker.cli import main


def test_promela_export_writes_one_d_step_per_ground_action(capsys):
    from toolcommit.model.instance import instance
    from toolcommit.model.knobs import preset
    from toolcommit.model.semantics import build

    assert main(["export", "--format", "promela", "--preset", "naive", "--instance", "cancel"]) == 0
    out = capsys.readouterr().out
    actions = [a for a in build(preset("naive"), instance("cancel")).actions if not a.cut]
    assert out.count(":: d_step") == len(actions) and "active proctype model()" in out
    assert "monitor" not in out


def test_promela_export_with_a_property_asserts_it_and_writes_the_file_atomically(tmp_path, capsys):
    target = tmp_path / "m.pml"
    assert (
        main(
            [
                "export",
                "--format",
                "promela",
                "--instance",
                "ack_loss",
                "--property",
                "I1",
                "-o",
                str(target),
            ]
        )
        == 0
    )
    assert capsys.readouterr().out == ""
    text = target.read_text()
    assert "active proctype monitor()" in text and "assert(false)" in text
    assert [p.name for p in tmp_path.iterdir()] == ["m.pml"]


@pytest.mark.parametrize(
    "args,message",
    [
        (["--format", "promela", "x.db"], "reads no SOURCE ('x.db')"),
        (["--format", "promela", "--property", "P9"], "--property P9: not an invariant"),
        (
            ["--format", "promela", "--instance", "cancel", "--instance", "zombie"],
            "give --instance once",
        ),
    ],
)
def test_export_misuse_is_one_line_exit_2(capsys, args, message):
    assert main(["export", *args]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
