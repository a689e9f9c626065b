// A scripted worker in its own process (so its memory is not the client's) that serves one
// run of N events: `node build/bench/long-run-server.js N`. Prints the discovery folder,
// pin and instance ID as one JSON line, then serves until stdin closes.
import { done, say, startFakeWorker } from "../test/helpers/fake-worker.js";
import { RunStatus } from "../src/gen/colossus/api/v1alpha1/runs_pb.js";

const count = Number(process.argv[2] ?? "100000");
const RUN = "run_bench";

function* events(): Generator<ReturnType<typeof say>> {
  for (let s = 1; s < count; s += 1) yield say(RUN, s, "tick ");
  yield done(RUN, count);
}

const worker = await startFakeWorker({
  watches: [{ events: { [Symbol.iterator]: events } as unknown as ReturnType<typeof say>[] }],
  run: () => ({ runId: RUN, status: RunStatus.SUCCEEDED, lastSequence: BigInt(count) }),
});
process.stdout.write(`${JSON.stringify({ dir: worker.dir, pin: worker.pin })}\n`);
process.stdin.resume();
process.stdin.on("end", () => {
  void worker.close().then(() => process.exit(0));
});
