"""`toolcommit validate --from SOURCE TRACE...`: check what a real runtime emitted.

The options the adapters add to `validate`, and their run: adapt, check, render the
report followed by what the source let it judge, property by property, and notes.
"""

from __future__ import annotations

import inspect
import json
import sys
from pathlib import Path

from toolcommit.checker.logs.adapters.capability import sources
from toolcommit.checker.logs.read import check_paths
from toolcommit.checker.output import refuse_inputs, write_atomic
from toolcommit.checker.render.findings import RENDERERS
from toolcommit.model.errors import UsageError

EXIT = {"CONFORMS": 0, "VIOLATES": 1, "INCONCLUSIVE": 3}


def add_arguments(p) -> None:
    g = p.add_argument_group("traces from a runtime (LOG... are trace files)")
    g.add_argument(
        "--from",
        dest="source",
        choices=sources(),
        metavar="SOURCE",
        help="read LOG... as traces: otel (OTLP JSON or the SDK's console JSON: "
        "GenAI execute_tool spans), langgraph (astream_events v2, one file per "
        "process run), openai-agents (span.export() JSON lines from a "
        "TracingProcessor), dbos (the system database: SQLite file, "
        "postgresql:// URL, or its tables as JSON) or temporal (workflow "
        "histories: temporal workflow show --output json)",
    )
    g.add_argument(
        "--scope",
        metavar="RULE",
        help="what one user intent is: a path into each call's view "
        "(attributes.gen_ai.conversation.id, metadata.thread_id, args.order) or "
        "MODULE:FUNCTION (importable from the working directory) called with "
        "the view, a dict; default: the source's own, one that survives a resume "
        "(a thread, conversation or workflow id; each source's default and view "
        "are in spec/sources.json)",
    )
    g.add_argument(
        "--effectful",
        metavar="TOOL,...",
        help="tools whose calls change the world (default: every tool)",
    )
    g.add_argument(
        "--ledger",
        action="append",
        default=[],
        metavar="FILE",
        help="provider-side effects to join (Stripe events JSON, Powertools "
        "idempotency records, or a JSONL/CSV ledger), to a trace's calls or, "
        "without --from, to an intent log's keys; repeatable",
    )
    g.add_argument(
        "--idempotency-key",
        metavar="PATH",
        help="where a call's idempotency key is (a path such as args.key); default: its call id",
    )
    g.add_argument(
        "--checkpoints",
        action="append",
        default=[],
        metavar="FILE",
        help="LangGraph checkpoint tuples dumped as JSON (names the calls the "
        "model emitted); repeatable",
    )
    g.add_argument(
        "--run-items",
        action="append",
        default=[],
        metavar="FILE",
        help="OpenAI Agents run items dumped as JSON (the function_call items of "
        "result.to_input_list()): the call ids the spans lack; repeatable",
    )
    g.add_argument(
        "--log",
        dest="intent_logs",
        action="append",
        default=[],
        metavar="FILE",
        help="the intent log of the same run (toolcommit.runtime's: toolcommit "
        "export DB, or log.export): the trace's calls of a tool it guards are "
        "judged by its lines and keys, as validate judges the log; repeatable",
    )
    g.add_argument(
        "--emit",
        metavar="FILE",
        help="also write the derived intent log (JSON Lines, spec/log.schema.json)",
    )


def _effectful(text):
    if text is None:
        return None
    tools = frozenset(t.strip() for t in text.split(",") if t.strip())
    if not tools:
        raise UsageError("--effectful names no tool; give TOOL[,TOOL...]")
    return tools


def render(tr, fmt: str, code: int) -> str:
    """The report in `fmt`, with the capability rows and notes."""
    report = tr.report
    if fmt == "json":
        data = json.loads(_plain(report, "json", code))
        data["source"] = {
            "name": tr.source,
            "stats": tr.stats,
            "judged": [r.to_json() for r in tr.judged],
            "missing": tr.missing,
            "notes": tr.notes,
        }
        return json.dumps(data, indent=1) + "\n"
    text = _plain(report, fmt, code)
    lead = "%% " if fmt == "mermaid" else ""
    s = tr.stats
    out = [
        f"{lead}What this {tr.source} trace let toolcommit judge ({s['tool_calls']} tool "
        f"calls, {s['effectful_calls']} effectful under {s['call_ids']} call ids, "
        f"{s['effects_joined']} ledger effects joined):"
    ]
    out += [f"{lead}  {r.line()}" for r in tr.judged]
    if tr.missing:
        out.append(f"{lead}Missing, so this run cannot conform:")
        out += [f"{lead}  {m}" for m in tr.missing]
    if tr.notes:
        out.append(f"{lead}Notes:")
        out += [f"{lead}  {n}" for n in tr.notes]
    return text + ("\n" if fmt == "text" else "") + "\n".join(out) + "\n"


def base_format(fmt: str) -> str:
    """The format the report is rendered in first: html is built from the JSON report."""
    return "json" if fmt == "html" else fmt


def finish(report, text: str, args) -> str:
    """The rendered report as it is written: text fitted to the terminal's width (to
    `fit.DEFAULT` in a file), or the HTML page around the JSON report `text`."""
    if args.format == "html":
        from toolcommit.checker.render.html.validate import render_validate_html

        return render_validate_html(text)
    if args.format == "text":
        from toolcommit.checker.cli.terminal import width
        from toolcommit.checker.render.fit import DEFAULT, fit

        return fit(text, DEFAULT if args.output else width())
    return text


def with_ledger(text: str, fmt: str, ledgers, joined) -> str:
    """An intent log's report `text` followed by what the ledgers joined (`joined`: a
    `ledger.Joined`) and the notes on what they could not."""
    n = len(joined.effects)
    if fmt == "json":
        data = json.loads(text)
        data["ledger"] = {
            "files": list(ledgers),
            "effects_joined": n,
            "missing": joined.missing,
            "notes": joined.notes,
        }
        return json.dumps(data, indent=1) + "\n"
    lead = "%% " if fmt == "mermaid" else ""
    out = [f"{lead}Ledger: {n} effect(s) joined to the log's keys from {', '.join(ledgers)}"]
    if joined.missing:
        out.append(f"{lead}Missing, so this run cannot conform:")
        out += [f"{lead}  {m}" for m in joined.missing]
    out += [f"{lead}  {note}" for note in joined.notes]
    return text + ("\n" if fmt == "text" else "") + "\n".join(out) + "\n"


def _plain(report, fmt: str, code: int) -> str:
    fn = RENDERERS[fmt]
    takes_code = len(inspect.signature(fn).parameters) > 1
    return fn(report, code) if takes_code else fn(report)


def refuse_without_source(args) -> None:
    """The trace options mean nothing for an intent log: say so (exit 2)."""
    for opt in (
        "scope",
        "effectful",
        "idempotency_key",
        "emit",
        "checkpoints",
        "run_items",
        "intent_logs",
    ):
        if getattr(args, opt):
            flag = "log" if opt == "intent_logs" else opt.replace("_", "-")
            raise UsageError(
                f"--{flag} needs --from SOURCE (the LOG files "
                f"are then traces; sources: {', '.join(sources())})"
            )


def run(args) -> int:
    if args.key:
        raise UsageError(
            "--key is for intent logs; with --from, --emit the derived log "
            "and validate it with --key"
        )
    inputs = [*args.logs, *args.ledger, *args.checkpoints, *args.run_items, *args.intent_logs]
    if "-" in args.intent_logs:
        raise UsageError(
            "--log -: give the intent log as a file (it is read twice: its "
            "proposals, then the check), e.g. from toolcommit export DB -o FILE"
        )
    if args.emit == "-":
        raise UsageError(
            "--emit -: give a file name for the derived log (stdout is where the report goes)"
        )
    if args.emit:  # before reading: never over a file it reads
        refuse_inputs(Path(args.emit), inputs, args.emit)
    if args.max_line_bytes is not None:
        check_paths(inputs, args.max_line_bytes)
    from toolcommit.checker.logs.adapters.rules import Rules
    from toolcommit.checker.logs.adapters.trace import check_trace

    rules = Rules(args.scope, _effectful(args.effectful), args.idempotency_key)
    tr = check_trace(
        args.source,
        args.logs,
        rules,
        args.ledger,
        args.checkpoints,
        args.run_items,
        args.max_line_bytes,
        args.intent_logs,
    )
    if args.emit:
        write_atomic(
            args.emit,
            "".join(json.dumps(p.event, separators=(",", ":")) + "\n" for p in tr.events),
            inputs=inputs,
        )
    code = EXIT[tr.report.verdict.value]
    text = finish(tr.report, render(tr, base_format(args.format), code), args)
    if args.output:
        write_atomic(args.output, text, inputs=inputs)
    else:
        sys.stdout.write(text)
    return code
