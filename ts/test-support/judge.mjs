// The Python checker on a Node process's log: `toolcommit export DB` then `toolcommit validate
// --design NAME`, where the `toolcommit` CLI is on PATH (the repository's venv, as under
// pytest and CI). Without it the check is skipped (null), except under CI, where it must run.
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync } from "node:fs";
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

/** validate --design's report on the log in `db`, exported to a file (null without the CLI). */
export async function judged(db, design = "stripe") {
  const exe = cli();
  if (exe === null) return null;
  const out = join(mkdtempSync(join(tmpdir(), "tc-judge-")), "log.jsonl");
  try {
    await run(exe, ["export", db, "-o", out], { timeout: 120_000 });
    return (await run(exe, ["validate", "--design", design, out], { timeout: 120_000 })).stdout;
  } catch (e) {
    return `exit ${e.code}: ${e.stdout}${e.stderr}`;
  }
}
