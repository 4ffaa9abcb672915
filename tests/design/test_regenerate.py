"""Searching the shipped designs again lives above the manifest's writer: the manifest
(verify layer) refuses --designs and names the command that does it (design layer)."""

from toolcommit.checker.design import regenerate
from toolcommit.checker.verify import manifest


def test_the_manifest_names_the_command_that_searches_the_designs_again(capsys):
    assert manifest.main(["--write", "--designs"]) == 2
    err = capsys.readouterr().err
    assert "python -m toolcommit.checker.design.regenerate" in err
    assert len(err.strip().splitlines()) == 1


def test_regenerate_takes_no_arguments_and_searches_nothing_on_one(capsys):
    assert regenerate.main(["--write"]) == 2
    assert "takes none" in capsys.readouterr().err
