// The published layout: the CommonJS build loads under require() with the same API as ESM.
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { test } from "node:test";
import * as esm from "../dist/esm/index.js";

test("the CommonJS and ESM builds export one API", () => {
  const require = createRequire(import.meta.url);
  const cjs = require("../dist/cjs/index.js");
  assert.deepEqual(Object.keys(cjs).filter((k) => k !== "__esModule").sort(), Object.keys(esm).sort());
  const a = cjs.canonicalIntent("refund", { amount: 20 }, "u");
  assert.equal(a.digest, esm.canonicalIntent("refund", { amount: 20.0 }, "u").digest);
  assert.equal(a.form, '["refund","u",{"amount":20}]');
});
