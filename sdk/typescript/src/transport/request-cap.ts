/**
 * C7 in one place: every request message of every call is held to the worker's advertised
 * request cap before it is sent. A channel's transports all carry this interceptor, so a
 * call cannot skip the check.
 */
import type { DescMessage, MessageShape } from "@bufbuild/protobuf";
import type { Interceptor, StreamRequest } from "@connectrpc/connect";
import { ResourceExhaustedError } from "../errors.js";
import { encodedSize } from "./encoded-size.js";

/** Throws when `message` encodes to more than `cap` bytes (0: no cap advertised). */
export function checkRequestSize<Desc extends DescMessage>(schema: Desc, message: MessageShape<Desc>, cap: number): void {
  if (cap <= 0) return;
  const size = encodedSize(schema, message);
  if (size > cap) {
    throw new ResourceExhaustedError(`the request is ${size} bytes, over the worker's limit of ${cap}`, {
      reason: "REQUEST_TOO_LARGE",
      metadata: { limit: String(cap) },
    });
  }
}

/**
 * Holds each request message to `cap()`, read per call (0 before `GetServerInfo` answered).
 * A stream's first message is checked before the call opens, so an oversized one never
 * reaches the worker; each later message is checked as the transport pulls it. (Waiting
 * for the first message before opening suits the contract's streams, whose first message
 * never waits for an answer; a bidirectional stream that did would stall here.)
 */
export function requestCapInterceptor(cap: () => number): Interceptor {
  return (next) => async (request) => {
    const limit = cap();
    if (!request.stream) {
      checkRequestSize(request.method.input, request.message, limit);
      return next(request);
    }
    if (limit <= 0) return next(request);
    return next({ ...request, message: await checkedStream(request, limit) });
  };
}

async function checkedStream(request: StreamRequest, cap: number): Promise<AsyncIterable<MessageShape<DescMessage>>> {
  const schema = request.method.input;
  const source = request.message[Symbol.asyncIterator]();
  const first = await source.next();
  if (first.done !== true) {
    try {
      checkRequestSize(schema, first.value, cap);
    } catch (error) {
      await source.return?.();
      throw error;
    }
  }
  return {
    async *[Symbol.asyncIterator]() {
      if (first.done === true) return;
      let finished = false;
      try {
        yield first.value;
        for (;;) {
          const item = await source.next();
          if (item.done === true) {
            finished = true;
            return;
          }
          checkRequestSize(schema, item.value, cap);
          yield item.value;
        }
      } finally {
        // The transport stopped pulling (or a message was refused): release the caller's source.
        if (!finished) await source.return?.();
      }
    },
  };
}
