/**
 * The gRPC transport of a channel: connect's own for unary calls; for streams, the same call
 * connect's gRPC transport makes (same interceptors, headers, serialization and caps, the
 * response and its trailers judged by connect's own helpers), with the response messages
 * split and parsed in one generator. connect passes every message through four down-levelled
 * async generators (split, decompress, parse, trailer check), several promise hops each: in a
 * CPU profile of a watch they were the largest group, about a third of the client's time per
 * event. Compare `stream()` with `createTransport` in `@connectrpc/connect/protocol-grpc`;
 * `test/grpc-transport.test.ts` holds the two to the same answers.
 */
import type { DescMessage, DescMethodStreaming, MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError, createContextValues, type ContextValues, type Interceptor, type StreamResponse, type Transport } from "@connectrpc/connect";
import {
  createMethodSerializationLookup,
  createMethodUrl,
  pipe,
  runStreamingCall,
  transformJoinEnvelopes,
  transformSerializeEnvelope,
  type Compression,
  type Serialization,
  type UniversalClientResponse,
  validateReadWriteMaxBytes,
} from "@connectrpc/connect/protocol";
import { createTransport, requestHeaderWithCompression, validateResponseWithCompression, validateTrailer } from "@connectrpc/connect/protocol-grpc";
import { compressionBrotli, compressionGzip, type Http2SessionManager } from "@connectrpc/connect-node";
import { createHttp2Client } from "./http2-client.js";
import { capDecompression, capResponses } from "./response-cap.js";

export interface GrpcTransportOptions {
  readonly baseUrl: string;
  readonly sessionManager: Http2SessionManager;
  readonly interceptors: Interceptor[];
  readonly readMaxBytes: number;
  readonly writeMaxBytes: number;
}

// connect's flag for a compressed message (gRPC's Compressed-Flag).
const COMPRESSED = 0b1;

export function createGrpcStreamingTransport(options: GrpcTransportOptions): Transport {
  // Every call, unary and streaming, reads its response through the SDK's own HTTP/2
  // client (see http2-client.ts: connect-node's iterates streams Node may have closed).
  // Both hold each response message to the read cap as the SDK's own refusal (C7).
  const httpClient = capResponses(createHttp2Client(options.sessionManager), options.readMaxBytes);
  // connect-node's default, so the request says what it always said.
  const acceptCompression = [compressionGzip, compressionBrotli].map(capDecompression);
  const connect = createTransport({
    httpClient,
    baseUrl: options.baseUrl,
    useBinaryFormat: true,
    interceptors: [...options.interceptors],
    acceptCompression,
    sendCompression: null,
    ...validateReadWriteMaxBytes(options.readMaxBytes, options.writeMaxBytes, undefined),
  });
  const limits = { readMaxBytes: options.readMaxBytes, writeMaxBytes: options.writeMaxBytes };
  return {
    unary: connect.unary.bind(connect),
    stream<I extends DescMessage, O extends DescMessage>(
      method: DescMethodStreaming<I, O>,
      signal: AbortSignal | undefined,
      timeoutMs: number | undefined,
      header: HeadersInit | undefined,
      input: AsyncIterable<MessageInitShape<I>>,
      contextValues?: ContextValues,
    ): Promise<StreamResponse<I, O>> {
      const serialization = createMethodSerializationLookup(method, undefined, undefined, limits);
      const timeout = timeoutMs !== undefined && timeoutMs > 0 ? timeoutMs : undefined;
      return runStreamingCall<I, O>({
        interceptors: options.interceptors,
        ...(signal === undefined ? {} : { signal }),
        ...(timeout === undefined ? {} : { timeoutMs: timeout }),
        req: {
          stream: true,
          service: method.parent,
          method,
          requestMethod: "POST",
          url: createMethodUrl(options.baseUrl, method),
          header: requestHeaderWithCompression(true, timeout, header, acceptCompression, null),
          contextValues: contextValues ?? createContextValues(),
          message: input,
        },
        next: async (req) => {
          const response = await httpClient({
            url: req.url,
            method: "POST",
            header: req.header,
            signal: req.signal,
            body: pipe(req.message, transformSerializeEnvelope(serialization.getI(true)), transformJoinEnvelopes(), { propagateDownStreamError: true }),
          });
          const { compression, foundStatus, headerError } = validateResponseWithCompression(acceptCompression, response.status, response.header);
          if (headerError) throw headerError;
          return {
            ...req,
            header: response.header,
            trailer: response.trailer,
            message: readMessages(response, serialization.getO(true), compression ?? null, options.readMaxBytes, foundStatus),
          };
        },
      });
    },
  };
}

/** The response's messages, each chunk split and parsed at once; then the trailers are judged. */
async function* readMessages<T>(
  response: UniversalClientResponse,
  parser: Serialization<T>,
  compression: Compression | null,
  readMaxBytes: number,
  foundStatus: boolean,
): AsyncGenerator<T> {
  let rest: Uint8Array | null = null;
  for await (const chunk of response.body) {
    const bytes: Uint8Array = rest === null ? chunk : concat(rest, chunk);
    let at = 0;
    while (bytes.length - at >= 5) {
      const flags = bytes[at] ?? 0;
      const length = (bytes[at + 1] ?? 0) * 2 ** 24 + (bytes[at + 2] ?? 0) * 2 ** 16 + (bytes[at + 3] ?? 0) * 2 ** 8 + (bytes[at + 4] ?? 0);
      // connect's checks, with its codes and words.
      if (length > readMaxBytes) {
        throw new ConnectError(`message size ${length} is larger than configured readMaxBytes ${readMaxBytes}`, Code.ResourceExhausted);
      }
      if (bytes.length - at - 5 < length) break;
      let data = bytes.subarray(at + 5, at + 5 + length);
      at += 5 + length;
      if ((flags & COMPRESSED) === COMPRESSED) {
        if (compression === null) throw new ConnectError("received compressed envelope, but do not know how to decompress", Code.Internal);
        data = await compression.decompress(data, readMaxBytes);
      }
      yield parser.parse(data);
    }
    rest = at < bytes.length ? bytes.subarray(at) : null;
  }
  if (rest !== null) throw new ConnectError("protocol error: incomplete envelope", Code.InvalidArgument);
  if (!foundStatus) validateTrailer(response.trailer, response.header);
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const joined = new Uint8Array(a.length + b.length);
  joined.set(a);
  joined.set(b, a.length);
  return joined;
}
