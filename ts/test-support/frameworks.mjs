// The four frameworks, each run offline with the real framework and a scripted model: the model
// calls refund(charge, amount), then calls it again under a new call id (as a model retries
// after a lost answer), then answers. Each (test-support/fw/NAME.mjs, loaded only when used)
// makes the framework's own tool from a refund function (`raw`), wraps it through the intent
// log (`wrap(raw, log, options)`) and runs an agent (or graph) with either (`run`), which
// resolves to what the model was told for each of its two calls, as text.
export const NAMES = ["ai", "mastra", "langgraph", "openai-agents"];

/** The framework `name`'s {raw, wrap, run}. */
export async function framework(name) {
  return (await import(`./fw/${name}.mjs`)).default;
}
