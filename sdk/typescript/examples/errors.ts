// Branching on typed errors, and the safe retry of a create whose outcome is unknown.
//
//   node build/examples/errors.js
import {
  CapabilityMissingError,
  Client,
  ColossusError,
  IdempotencyConflictError,
  NotFoundError,
  OutcomeUnknownError,
  type CreateRunResult,
} from "../src/index.js";
import { workerExecutable } from "./worker.js";

await using client = await Client.startSidecar({ executable: workerExecutable(), applicationId: "errors" });

/** Creates a run; after an unknown outcome, asks again with the same key (never a duplicate run). */
async function createSafely(input: string): Promise<CreateRunResult> {
  try {
    return await client.runs.create(input);
  } catch (error) {
    if (error instanceof OutcomeUnknownError && error.idempotencyKey !== null) {
      return client.runs.create(input, { idempotencyKey: error.idempotencyKey });
    }
    throw error;
  }
}

const created = await createSafely("colossus-script v1\nsay safe\n");
console.log(`created ${created.run.runId} with key ${created.idempotencyKey}`);

try {
  await client.runs.create("colossus-script v1\nsay other\n", { idempotencyKey: created.idempotencyKey });
} catch (error) {
  if (error instanceof IdempotencyConflictError) console.log(`conflict: ${error.reason ?? ""}`);
  else throw error;
}

try {
  await client.runs.get("run_missing");
} catch (error) {
  if (error instanceof NotFoundError) console.log(`not found: code=${error.code ?? ""} reason=${error.reason ?? ""}`);
  else throw error;
}

try {
  await client.runs.create([{ artifactId: "art_1", mediaType: "image/png" }]);
} catch (error) {
  if (error instanceof CapabilityMissingError) console.log(`refused locally: needs ${error.metadata["capability"] ?? "?"}`);
  else if (error instanceof ColossusError) console.log(`other error: ${error.toString()}`);
  else throw error;
}
