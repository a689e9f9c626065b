/**
 * `runs.list()`: an async iterable over runs that follows continuation tokens through short
 * and empty pages (the worker bounds its work per call), with `.pages()` for page-wise
 * traversal and `pageToken` to resume a traversal stored earlier.
 */
import { ProtocolViolationError } from "./errors.js";
import type { Run, RunPage } from "./models.js";

/** Empty pages with the same token in a row before the traversal is declared stuck. */
const MAX_STALLED_PAGES = 64;

export class RunPager implements AsyncIterable<Run> {
  /** @internal */
  constructor(
    private readonly fetchPage: (token: string) => Promise<RunPage>,
    private readonly startToken: string,
  ) {}

  /** Every page in order, starting at the given token. Each page is one `ListRuns` call. */
  async *pages(): AsyncGenerator<RunPage, void, undefined> {
    let token = this.startToken;
    let stalled = 0;
    for (;;) {
      const page = await this.fetchPage(token);
      yield page;
      if (page.nextPageToken === "") return;
      if (page.runs.length === 0 && page.nextPageToken === token) {
        stalled += 1;
        if (stalled >= MAX_STALLED_PAGES) {
          throw new ProtocolViolationError("ListRuns keeps returning an empty page with the same token", { reason: "PAGINATION_STALLED" });
        }
      } else stalled = 0;
      token = page.nextPageToken;
    }
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Run, void, undefined> {
    for await (const page of this.pages()) yield* page.runs;
  }

  /** Collects every run (convenient for small lists). */
  async toArray(): Promise<Run[]> {
    const runs: Run[] = [];
    for await (const run of this) runs.push(run);
    return runs;
  }
}
