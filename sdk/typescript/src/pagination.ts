/**
 * `runs.list()`: an async iterable over runs that follows continuation tokens through short
 * and empty pages (the worker bounds its work per call), with `.pages()` for page-wise
 * traversal and `pageToken` to resume a traversal stored earlier.
 */
import { ProtocolViolationError } from "./errors.js";
import type { Run, RunPage } from "./models.js";


/** The runs `runs.list()` returns, fetched a page at a time: `for await` over the runs, or over `pages()`. */
export class RunPager implements AsyncIterable<Run> {
  /** @internal */
  constructor(
    private readonly fetchPage: (token: string) => Promise<RunPage>,
    private readonly startToken: string,
  ) {}

  /** Every page in order, starting at the given token. Each page is one `ListRuns` call. */
  async *pages(): AsyncGenerator<RunPage, void, undefined> {
    let token = this.startToken;
    for (;;) {
      const page = await this.fetchPage(token);
      // A token binds the resume position, so an empty page that hands back the token it
      // was asked with made no progress: following it would loop forever.
      if (page.runs.length === 0 && page.nextPageToken !== "" && page.nextPageToken === token) {
        throw new ProtocolViolationError("ListRuns answered an empty page with the same continuation token", { reason: "PAGE_NO_PROGRESS" });
      }
      yield page;
      if (page.nextPageToken === "") return;
      token = page.nextPageToken;
    }
  }

  /** Yields every run, fetching the next page when one is used up. */
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
