"""HTML reports: one self-contained page per command (`--format html`).

Each page is one file: inline CSS, SVG drawn here (no script runs, nothing is loaded from
outside: a Content-Security-Policy in the page forbids it), and the command's JSON report
embedded whole in a `<script type="application/json" id="toolcommit-data">` block, so the
page carries the same data as `--format json`. `page` is the shell, `sequence` draws a
counterexample as a sequence diagram whose steps link to the state at each step,
`timeline` draws a log finding per writer; `check`, `validate`, `ask` and `design` are the
four reports. Pure: they read results and return text.
"""
