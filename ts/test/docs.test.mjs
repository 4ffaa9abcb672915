// Every page under docs/frameworks/typescript/ runs as printed: its ```js block, run as an ES
// module from ts/ (where `toolcommit` and the frameworks resolve), prints the lines of the
// ```text block after it; and there is one page per wrapper the package exports.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const TS = join(dirname(fileURLToPath(import.meta.url)), "..");
const DOCS = join(TS, "..", "docs", "frameworks", "typescript");
const PAGES = { "ai-sdk.md": "./ai", "mastra.md": "./mastra", "langgraph.md": "./langgraph", "openai-agents.md": "./openai-agents" };

const blocks = (text, lang) => [...text.matchAll(new RegExp("^```" + lang + "\\n([\\s\\S]*?)^```$", "gm"))].map((m) => m[1]);

test("one page per wrapper the package exports", () => {
  const pkg = JSON.parse(readFileSync(join(TS, "package.json"), "utf-8"));
  const wrappers = Object.keys(pkg.exports).filter((k) => k !== "." && k !== "./package.json");
  assert.deepEqual(readdirSync(DOCS).sort(), Object.keys(PAGES).sort());
  assert.deepEqual(Object.values(PAGES).sort(), wrappers.sort());
});

for (const page of Object.keys(PAGES)) {
  test(`docs/frameworks/typescript/${page}: its example prints what the page shows`, async () => {
    const text = readFileSync(join(DOCS, page), "utf-8");
    const [code, ...more] = blocks(text, "js");
    const [shown] = blocks(text, "text");
    assert.equal(more.length, 0, "one example per page");
    const { stdout } = await promisify(execFile)(process.execPath, ["--input-type=module", "-e", code], { cwd: TS, timeout: 120_000 });
    assert.equal(stdout, shown);
  });
}
