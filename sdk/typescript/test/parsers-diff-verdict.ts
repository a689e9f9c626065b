// The TypeScript verdict program of conformance/parsers_diff: reads JSON lines
// {"kind": ..., <vector members>} on stdin and prints one verdict line per input, calling
// the same parsers as vectors.test.ts (helpers/vector-parsers.ts).
import { createInterface } from "node:readline";
import { ColossusError, CredentialError, SidecarError, TrustError } from "../src/errors.js";
import { vectorParsers as parsers, type VectorInput } from "./helpers/vector-parsers.js";

function answer(input: VectorInput): { verdict: string; error?: string } {
  const parse = parsers[String(input["kind"])];
  if (parse === undefined) return { verdict: "unknown-kind" };
  try {
    parse(input);
    return { verdict: "accept" };
  } catch (error) {
    const name = error instanceof Error ? error.constructor.name : typeof error;
    if (error instanceof TrustError) return { verdict: "trust", error: name };
    if (error instanceof CredentialError) return { verdict: "credential", error: name };
    if (error instanceof SidecarError) return { verdict: "sidecar", error: name };
    if (error instanceof ColossusError) return { verdict: "other", error: name };
    // Anything untyped escaping a parser is a bug the driver reports, not a crash here.
    return { verdict: "untyped", error: name };
  }
}

for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
  if (line.trim() === "") continue;
  process.stdout.write(`${JSON.stringify(answer(JSON.parse(line) as VectorInput))}\n`);
}
