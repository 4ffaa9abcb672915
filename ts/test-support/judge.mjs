// The Python checker on a Node process's log: `toolcommit export DB` then `toolcommit validate
// --design NAME`, in one process of the interpreter of the `toolcommit` CLI on PATH (the
// repository's venv, as under pytest and CI). Without it the check is skipped (null), except
// under CI, where it must run.
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

function cli() {
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    if (dir && existsSync(join(dir, "toolcommit"))) return join(dir, "toolcommit");
  }
  if (process.env.CI) throw new Error("CI must judge the wrappers' logs: no toolcommit on PATH (activate the venv)");
  return null;
}

// one Python process: export, then validate --design (the CLI's own entry, twice)
const SCRIPT = `
import sys
from toolcommit.checker.cli import main
db, out, design = sys.argv[1:]
code = main(["export", db, "-o", out])
sys.exit(code if code else main(["validate", "--design", design, out]))
`;

/** validate --design's report on the log in `db`, exported to a file (null without the CLI). */
export async function judged(db, design = "stripe") {
  const exe = cli();
  if (exe === null) return null;
  const python = readFileSync(exe, "utf-8").split("\n", 1)[0].replace(/^#!\s*/, ""); // the CLI's interpreter
  const out = join(mkdtempSync(join(tmpdir(), "tc-judge-")), "log.jsonl");
  try {
    return (await run(python, ["-c", SCRIPT, db, out, design], { timeout: 120_000 })).stdout;
  } catch (e) {
    return `exit ${e.code}: ${e.stdout}${e.stderr}`;
  }
}
