"""Design questions (`toolcommit ask`): a question is data, the answer a typed grid.

- `schema`: the `Question` type, loading and validation (`QuestionError` names file and field);
- `grid`: each cell's merged settings and model, and the typed grid (`Cell`, `Answer`);
- `run`: every cell judged by the engines (the only module here that runs one);
- `explain`: the answer in words, citing counterexamples by footnote.

Rendering is `toolcommit.checker.render.answers`; files and exit codes are `toolcommit.checker.cli.ask`'s.
"""
