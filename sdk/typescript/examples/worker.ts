// Where the examples find the worker program (not part of the SDK).
import { existsSync } from "node:fs";
import path from "node:path";

export function workerExecutable(): string {
  const explicit = process.env["COLOSSUS_REFERENCE_WORKER"];
  if (explicit !== undefined && explicit !== "") return explicit;
  for (const dir of (process.env["PATH"] ?? "").split(path.delimiter)) {
    const candidate = path.join(dir, "colossus-reference-worker");
    if (dir !== "" && existsSync(candidate)) return candidate;
  }
  console.error("install the reference worker first: pip install ./conformance");
  process.exit(2);
}
