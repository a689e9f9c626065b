/**
 * C7 for what the worker sends: a response message over the accepted response cap is a
 * local refusal, `RESPONSE_TOO_LARGE` with no status code, as `REQUEST_TOO_LARGE` is for
 * requests and as the other SDKs report it. connect refuses such a message too, but as a
 * `RESOURCE_EXHAUSTED` status that reads like the worker's. So every response body is read
 * through {@link capResponses}, which sees each message's length prefix before connect does,
 * and a compressed message that grows over the cap fails in {@link capDecompression}.
 */
import type { Compression, UniversalClientFn, UniversalClientResponse } from "@connectrpc/connect/protocol";
import { ResourceExhaustedError } from "../errors.js";

/** The local refusal of a response message over `cap` bytes (`size`: its length, when known). */
export function responseTooLarge(cap: number, size?: number): ResourceExhaustedError {
  const figures = size === undefined ? `of ${cap} bytes` : `(${size} bytes; the cap is ${cap})`;
  return new ResourceExhaustedError(`a response is larger than the accepted response cap ${figures}`, {
    reason: "RESPONSE_TOO_LARGE",
    metadata: { limit: String(cap) },
  });
}

/** `compression` whose output over the cap (zlib's `ERR_BUFFER_TOO_LARGE`) is the same refusal. */
export function capDecompression(compression: Compression): Compression {
  return {
    name: compression.name,
    compress: (bytes) => compression.compress(bytes),
    decompress: (bytes, readMaxBytes) =>
      compression.decompress(bytes, readMaxBytes).catch((error: unknown) => {
        throw overCap(error) ? responseTooLarge(readMaxBytes) : error;
      }),
  };
}

// connect keeps zlib's error as the cause of its own.
function overCap(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; depth < 8 && current !== undefined && current !== null; depth += 1) {
    if ((current as { code?: unknown }).code === "ERR_BUFFER_TOO_LARGE") return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

/** `client` with every response body held to `cap` bytes per gRPC message. */
export function capResponses(client: UniversalClientFn, cap: number): UniversalClientFn {
  return async (request) => {
    const response = await client(request);
    return { ...response, body: capped(response.body, cap) };
  };
}

// gRPC's message prefix: one flag byte, then the length in four bytes, big-endian.
const PREFIX_BYTES = 5;

function capped(body: UniversalClientResponse["body"], cap: number): UniversalClientResponse["body"] {
  return {
    [Symbol.asyncIterator]() {
      const chunks = body[Symbol.asyncIterator]();
      const prefixes = new PrefixReader(cap);
      // One `then` per chunk, no generator: the watch reads every event through here.
      return {
        next: () =>
          chunks.next().then((item) => {
            if (item.done === true) return item;
            try {
              prefixes.read(item.value);
            } catch (error) {
              // The reader gets the error from next(), so it will not close the body itself.
              void chunks.return?.();
              throw error;
            }
            return item;
          }),
        return: async (value?: unknown) => (await chunks.return?.(value)) ?? { done: true, value: undefined },
      };
    },
  };
}

/** Follows the message boundaries across chunks and refuses a prefix whose length is over the cap. */
class PrefixReader {
  private readonly prefix = new Uint8Array(PREFIX_BYTES);
  private prefixBytes = 0;
  /** Bytes of the current message still to pass. */
  private bodyBytes = 0;

  constructor(private readonly cap: number) {}

  read(chunk: Uint8Array): void {
    let at = 0;
    while (at < chunk.length) {
      if (this.bodyBytes > 0) {
        const n = Math.min(this.bodyBytes, chunk.length - at);
        this.bodyBytes -= n;
        at += n;
        continue;
      }
      this.prefix[this.prefixBytes] = chunk[at] ?? 0;
      this.prefixBytes += 1;
      at += 1;
      if (this.prefixBytes === PREFIX_BYTES) {
        this.prefixBytes = 0;
        const p = this.prefix;
        const length = (p[1] ?? 0) * 2 ** 24 + (p[2] ?? 0) * 2 ** 16 + (p[3] ?? 0) * 2 ** 8 + (p[4] ?? 0);
        if (length > this.cap) throw responseTooLarge(this.cap, length);
        this.bodyBytes = length;
      }
    }
  }
}
