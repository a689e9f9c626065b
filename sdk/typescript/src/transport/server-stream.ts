/**
 * A server-streaming call read straight from the transport. connect's promise client wraps
 * every call's responses in one more (down-levelled) async generator, several promise hops
 * per message; a CPU profile of the watch showed that layer. The call runs through the same
 * transport, so the same interceptors (bearer, request cap), caps and signal apply.
 */
import type { DescMessage, DescMethodServerStreaming, MessageInitShape, MessageShape } from "@bufbuild/protobuf";
import type { Transport } from "@connectrpc/connect";

// The transport takes a call's requests as a stream; this one has a single message (and
// nothing to await: connect's own helper for it is marked internal).
// eslint-disable-next-line @typescript-eslint/require-await
async function* single<T>(item: T): AsyncGenerator<T> {
  yield item;
}

/**
 * Starts the call and returns its responses. A failure to open the call (an interceptor's
 * refusal, a connection error) rejects the first `next()`, as with the promise client.
 */
export function openServerStream<I extends DescMessage, O extends DescMessage>(
  transport: Transport,
  method: DescMethodServerStreaming<I, O>,
  input: MessageInitShape<I>,
  signal: AbortSignal,
): AsyncIterator<MessageShape<O>> {
  const response = transport.stream(method, signal, undefined, undefined, single(input));
  // The caller may stop before its first `next()`; the failure then has nobody to tell.
  response.catch(() => undefined);
  let messages: AsyncIterator<MessageShape<O>> | null = null;
  return {
    // After the first call this is the transport's own iterator, with no hop of its own.
    next: () =>
      messages !== null
        ? messages.next()
        : response.then((opened) => {
            messages = opened.message[Symbol.asyncIterator]();
            return messages.next();
          }),
  };
}
