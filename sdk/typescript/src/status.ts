/**
 * Maps anything a call can throw to the SDK's hierarchy: the single source of that mapping.
 * The worker's reason travels in one `google.rpc.ErrorInfo` detail; it is decoded here by
 * hand (three fields), so the SDK carries no copy of the Google protos.
 */
import { BinaryReader, WireType } from "@bufbuild/protobuf/wire";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  AbortedError,
  ApiError,
  AuthenticationError,
  CapabilityMissingError,
  ColossusError,
  DataLossError,
  DeadlineExceededError,
  FailedPreconditionError,
  IdempotencyConflictError,
  InternalServerError,
  InvalidArgumentError,
  NotFoundError,
  OutcomeUnknownError,
  PermissionDeniedError,
  ResourceExhaustedError,
  TransportError,
  type StatusCode,
} from "./errors.js";

export const ERROR_DOMAIN = "colossus.api.v1alpha1";
const ERROR_INFO_TYPE = "google.rpc.ErrorInfo";
const RETRY_INFO_TYPE = "google.rpc.RetryInfo";
/** A `RetryInfo` delay above this is ignored: no caller should sleep that long on a hint. */
const MAX_RETRY_DELAY_MS = 3_600_000;
const MAX_DETAIL_BYTES = 16 * 1024;

const CODE_NAMES: Readonly<Record<number, StatusCode>> = {
  [Code.Canceled]: "CANCELLED",
  [Code.Unknown]: "UNKNOWN",
  [Code.InvalidArgument]: "INVALID_ARGUMENT",
  [Code.DeadlineExceeded]: "DEADLINE_EXCEEDED",
  [Code.NotFound]: "NOT_FOUND",
  [Code.AlreadyExists]: "ALREADY_EXISTS",
  [Code.PermissionDenied]: "PERMISSION_DENIED",
  [Code.ResourceExhausted]: "RESOURCE_EXHAUSTED",
  [Code.FailedPrecondition]: "FAILED_PRECONDITION",
  [Code.Aborted]: "ABORTED",
  [Code.OutOfRange]: "OUT_OF_RANGE",
  [Code.Unimplemented]: "UNIMPLEMENTED",
  [Code.Internal]: "INTERNAL",
  [Code.Unavailable]: "UNAVAILABLE",
  [Code.DataLoss]: "DATA_LOSS",
  [Code.Unauthenticated]: "UNAUTHENTICATED",
};

type ErrorClass = new (message: string, details: ConstructorParameters<typeof ColossusError>[1]) => ColossusError;

const BY_CODE: Readonly<Partial<Record<StatusCode, ErrorClass>>> = {
  UNAUTHENTICATED: AuthenticationError,
  PERMISSION_DENIED: PermissionDeniedError,
  NOT_FOUND: NotFoundError,
  INVALID_ARGUMENT: InvalidArgumentError,
  OUT_OF_RANGE: InvalidArgumentError,
  FAILED_PRECONDITION: FailedPreconditionError,
  RESOURCE_EXHAUSTED: ResourceExhaustedError,
  DATA_LOSS: DataLossError,
  INTERNAL: InternalServerError,
  UNAVAILABLE: TransportError,
  DEADLINE_EXCEEDED: DeadlineExceededError,
  CANCELLED: TransportError,
  UNKNOWN: TransportError,
};

const BY_REASON: Readonly<Record<string, ErrorClass>> = {
  IDEMPOTENCY_CONFLICT: IdempotencyConflictError,
  CAPABILITY_NOT_SUPPORTED: CapabilityMissingError,
};

/** Codes after which a mutation may or may not have taken effect. */
const AMBIGUOUS: ReadonlySet<StatusCode> = new Set<StatusCode>([
  "UNAVAILABLE",
  "DEADLINE_EXCEEDED",
  "CANCELLED",
  "UNKNOWN",
  "INTERNAL",
  "ABORTED",
]);

/** True when the failure never reached the worker (nothing listens: it is restarting). */
export function isUnreachable(error: ColossusError): boolean {
  return error.reason === "UNREACHABLE";
}

const UNREACHABLE_CODES = new Set(["ECONNREFUSED", "ENOENT", "EHOSTUNREACH", "ENETUNREACH"]);

function unreachableCause(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; depth < 8 && current !== undefined && current !== null; depth += 1) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === "string" && UNREACHABLE_CODES.has(code)) return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

/** Only `UNAVAILABLE` is retried, and only for reads. */
export function isRetryable(error: ColossusError): boolean {
  return error.code === "UNAVAILABLE" && !(error instanceof OutcomeUnknownError);
}

/** Decodes `google.rpc.ErrorInfo` bytes; `null` when malformed. */
export function decodeErrorInfo(
  bytes: Uint8Array,
): { reason: string; domain: string; metadata: Record<string, string> } | null {
  if (bytes.length > MAX_DETAIL_BYTES) return null;
  try {
    const reader = new BinaryReader(bytes);
    let reason = "";
    let domain = "";
    const metadata: Record<string, string> = {};
    while (reader.pos < reader.len) {
      const [field, wireType] = reader.tag();
      if (field === 1 && wireType === WireType.LengthDelimited) reason = reader.string();
      else if (field === 2 && wireType === WireType.LengthDelimited) domain = reader.string();
      else if (field === 3 && wireType === WireType.LengthDelimited) {
        const entry = new BinaryReader(reader.bytes());
        let key = "";
        let value = "";
        while (entry.pos < entry.len) {
          const [f, w] = entry.tag();
          if (f === 1 && w === WireType.LengthDelimited) key = entry.string();
          else if (f === 2 && w === WireType.LengthDelimited) value = entry.string();
          else entry.skip(w);
        }
        metadata[key] = value;
      } else reader.skip(wireType);
    }
    return { reason, domain, metadata };
  } catch {
    return null;
  }
}

function errorInfoOf(error: ConnectError): { reason: string | null; metadata: Record<string, string> } {
  for (const detail of error.details) {
    if (!("type" in detail) || detail.type !== ERROR_INFO_TYPE || !(detail.value instanceof Uint8Array)) continue;
    const info = decodeErrorInfo(detail.value);
    if (info?.domain === ERROR_DOMAIN) return { reason: info.reason || null, metadata: info.metadata };
  }
  return { reason: null, metadata: {} };
}

/**
 * Decodes `google.rpc.RetryInfo` bytes (`retry_delay`: a `google.protobuf.Duration`) into
 * milliseconds; `null` when malformed, negative or over an hour.
 */
export function decodeRetryDelayMs(bytes: Uint8Array): number | null {
  if (bytes.length > MAX_DETAIL_BYTES) return null;
  try {
    const reader = new BinaryReader(bytes);
    let seconds = 0n;
    let nanos = 0;
    while (reader.pos < reader.len) {
      const [field, wireType] = reader.tag();
      if (field === 1 && wireType === WireType.LengthDelimited) {
        const duration = new BinaryReader(reader.bytes());
        while (duration.pos < duration.len) {
          const [f, w] = duration.tag();
          if (f === 1 && w === WireType.Varint) seconds = BigInt(duration.int64());
          else if (f === 2 && w === WireType.Varint) nanos = duration.int32();
          else duration.skip(w);
        }
      } else reader.skip(wireType);
    }
    const ms = Number(seconds) * 1000 + nanos / 1e6;
    return Number.isFinite(ms) && ms >= 0 && ms <= MAX_RETRY_DELAY_MS ? ms : null;
  } catch {
    return null;
  }
}

function retryDelayOf(error: ConnectError): number | null {
  for (const detail of error.details) {
    if ("type" in detail && detail.type === RETRY_INFO_TYPE && detail.value instanceof Uint8Array) return decodeRetryDelayMs(detail.value);
  }
  return null;
}

/** What the caller knows about the failed call. */
export interface MapContext {
  /** True for CreateRun, CancelRun, RespondInteraction and uploads. */
  readonly mutation?: boolean;
  readonly idempotencyKey?: string | null;
  /** The caller's signal: an abort is reported as {@link AbortedError}. */
  readonly signal?: AbortSignal | undefined;
}

function findColossusCause(error: unknown): ColossusError | null {
  let current: unknown = error;
  for (let depth = 0; depth < 8 && current !== undefined && current !== null; depth += 1) {
    if (current instanceof ColossusError) return current;
    current = (current as { cause?: unknown }).cause;
  }
  return null;
}

/** Maps one failure; a `ColossusError` anywhere in the cause chain wins (trust failures). */
export function mapError(error: unknown, context: MapContext = {}): ColossusError {
  const own = findColossusCause(error);
  if (own !== null) return own;
  const connectError = ConnectError.from(error);
  const code = CODE_NAMES[connectError.code] ?? "UNKNOWN";
  const info = errorInfoOf(connectError);
  const metadata = info.metadata;
  const reason = info.reason ?? (code === "UNAVAILABLE" && unreachableCause(error) ? "UNREACHABLE" : null);
  const text = connectError.rawMessage || code.toLowerCase();
  const idempotencyKey = context.idempotencyKey ?? null;
  if (context.signal?.aborted === true) {
    const what = context.mutation === true ? "; the outcome of the call is unknown" : "";
    const Cls = context.mutation === true ? OutcomeUnknownError : AbortedError;
    return new Cls(`the call was aborted by the caller${what}`, {
      code: "CANCELLED",
      reason: "ABORTED",
      idempotencyKey,
    });
  }
  if (context.mutation === true && AMBIGUOUS.has(code)) {
    return new OutcomeUnknownError(`the outcome of the call is unknown: ${text}`, {
      code,
      reason,
      metadata,
      idempotencyKey,
    });
  }
  const Cls = (reason !== null ? BY_REASON[reason] : undefined) ?? BY_CODE[code] ?? ApiError;
  if (Cls === ResourceExhaustedError) {
    return new ResourceExhaustedError(text, { code, reason, metadata, idempotencyKey, retryDelayMs: retryDelayOf(connectError) });
  }
  return new Cls(text, { code, reason, metadata, idempotencyKey });
}
