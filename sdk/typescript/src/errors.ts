/**
 * The one error hierarchy of the SDK, and the one place that maps RPC failures to it.
 *
 * Every error the SDK throws on purpose is a {@link ColossusError}. Errors from the worker
 * carry the gRPC status name, the `ErrorInfo` reason (without the `ERROR_REASON_` prefix)
 * and its metadata; local refusals carry `code: null`. Messages are built from codes,
 * reasons, declared metadata keys and the server's text only, never from a bearer.
 */
import { inspect } from "node:util";
import type { ReasonName } from "./reasons.js";

/** gRPC status names, as the wire and the other SDKs spell them. */
export type StatusCode =
  | "CANCELLED"
  | "UNKNOWN"
  | "INVALID_ARGUMENT"
  | "DEADLINE_EXCEEDED"
  | "NOT_FOUND"
  | "ALREADY_EXISTS"
  | "PERMISSION_DENIED"
  | "RESOURCE_EXHAUSTED"
  | "FAILED_PRECONDITION"
  | "ABORTED"
  | "OUT_OF_RANGE"
  | "UNIMPLEMENTED"
  | "INTERNAL"
  | "UNAVAILABLE"
  | "DATA_LOSS"
  | "UNAUTHENTICATED";

/** Optional fields of every {@link ColossusError}. */
export interface ErrorDetails {
  readonly code?: StatusCode | null;
  readonly reason?: ReasonName | null;
  readonly metadata?: Readonly<Record<string, string>>;
  readonly idempotencyKey?: string | null;
  readonly cause?: unknown;
}

const EMPTY: Readonly<Record<string, string>> = Object.freeze({});
/**
 * `instanceof` across copies of the package. An app can load both the ESM and the CommonJS
 * build (or two installed versions), and each copy has its own classes, so the prototype
 * chain alone would say an error thrown by one copy is no `NotFoundError` of the other. Each
 * SDK class therefore has a brand, `Symbol.for("colossus-sdk.error.<Name>")` (the same symbol
 * in every copy), and each error carries the brands of every SDK class it was constructed as:
 * its own and its ancestors'. `instanceof` on an SDK class checks for that class's brand.
 */
const BRANDS = new WeakMap<object, symbol>();

/** The brands of `target` and its SDK ancestors (a subclass of your own adds none). */
function brandsOf(target: object | null): symbol[] {
  const brands: symbol[] = [];
  for (let c = target; c !== null && c !== Error; c = Object.getPrototypeOf(c) as object | null) {
    const brand = BRANDS.get(c);
    if (brand !== undefined) brands.push(brand);
  }
  return brands;
}

/** Root of every error the SDK throws. Branch on `code`, `reason` and the class, never on `message`. */
export class ColossusError extends Error {
  /** The gRPC status name, or `null` when the SDK refused locally. */
  readonly code: StatusCode | null;
  /** The `ErrorInfo` reason or the SDK's local reason (compare with {@link Reason}), or `null`. */
  readonly reason: ReasonName | null;
  /** `ErrorInfo` metadata (`field`, `limit`, `scope`, `capability`, ...). */
  readonly metadata: Readonly<Record<string, string>>;
  /** The idempotency key of the `runs.create` call that failed, when there was one. */
  readonly idempotencyKey: string | null;

  constructor(message: string, details: ErrorDetails = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.name = new.target.name;
    this.code = details.code ?? null;
    this.reason = details.reason ?? null;
    this.metadata = details.metadata ? Object.freeze({ ...details.metadata }) : EMPTY;
    this.idempotencyKey = details.idempotencyKey ?? null;
    for (const brand of brandsOf(new.target)) Object.defineProperty(this, brand, { value: true });
  }

  /**
   * Keeps `instanceof` working for every SDK error class across two copies of the package
   * (ESM + CJS); a class of your own that extends one of them uses the prototype chain.
   */
  static override [Symbol.hasInstance](value: unknown): boolean {
    if (Function.prototype[Symbol.hasInstance].call(this, value)) return true;
    const brand = BRANDS.get(this);
    return brand !== undefined && typeof value === "object" && value !== null && brand in value;
  }

  /**
   * Whether sending the same request again may succeed and repeats no effect: a read that
   * failed with `UNAVAILABLE` (a {@link TransportError}), or a create refused under the
   * worker's create rate limit (`CREATE_RATE_LIMIT`: nothing was created, so the same call
   * with the same idempotency key is safe after `retryDelayMs`). The same rule as Go's
   * `Error.Retryable` and Rust's `Error::is_retryable`; the SDK itself retries only the
   * first, never a mutation.
   */
  get retryable(): boolean {
    if (this.code === "UNAVAILABLE" && this instanceof TransportError) return true;
    return this.code === "RESOURCE_EXHAUSTED" && this.reason === "CREATE_RATE_LIMIT";
  }

  /** A one-line summary with code, reason, metadata and key; safe to log. */
  override toString(): string {
    const parts: string[] = [];
    if (this.code !== null) parts.push(`code=${this.code}`);
    if (this.reason !== null) parts.push(`reason=${this.reason}`);
    const keys = Object.keys(this.metadata).sort();
    if (keys.length > 0) parts.push(`metadata=${keys.map((k) => `${k}=${this.metadata[k] ?? ""}`).join(",")}`);
    if (this.idempotencyKey !== null) parts.push(`idempotencyKey=${this.idempotencyKey}`);
    return `${this.name}: ${this.message}${parts.length > 0 ? ` (${parts.join("; ")})` : ""}`;
  }

  /** The same fields as plain data, for structured logs. */
  toJSON(): Record<string, unknown> {
    return {
      name: this.name,
      message: this.message,
      code: this.code,
      reason: this.reason,
      metadata: this.metadata,
      idempotencyKey: this.idempotencyKey,
    };
  }

  /** `util.inspect` shows the summary and the stack, never the cause chain's internals. */
  [inspect.custom](): string {
    return `${this.toString()}\n${(this.stack ?? "").split("\n").slice(1).join("\n")}`;
  }
}

// --- connection and trust (C1-C6) ------------------------------------------------------

/** The worker could not be shown to be the one this client was provisioned for. */
export class TrustError extends ColossusError {}
/** `endpoint.json` (or a sidecar bootstrap reply) broke the descriptor rules (C1). */
export class DescriptorError extends TrustError {}
/** `certificate.pem` broke the certificate rules (C2). */
export class CertificateError extends TrustError {}
/** A certificate or instance ID disagreed with the provisioned identity (C3, C4). */
export class PinMismatchError extends TrustError {}
/** The live handshake broke the TLS policy: TLS 1.3 only, exactly one leaf certificate (C4). */
export class TlsPolicyError extends TrustError {}
/** `GetServerInfo` named another instance, package, major version or placement (C6). */
export class IncompatibleServerError extends TrustError {}
/** The credential provider failed or returned a malformed bearer (C5, C8). */
export class CredentialError extends ColossusError {}

// --- errors reported by the worker -----------------------------------------------------

/** The worker refused the call with a definite status. */
export class ApiError extends ColossusError {}
/** `UNAUTHENTICATED`: the bearer is missing, unknown, not active or revoked. */
export class AuthenticationError extends ApiError {}
/** `PERMISSION_DENIED`: a scope or role is not in the application's grant. */
export class PermissionDeniedError extends ApiError {}
/** `NOT_FOUND`: the run, interaction or artifact is not visible to this application. */
export class NotFoundError extends ApiError {}
/** `INVALID_ARGUMENT`, or a request the SDK refused locally before sending it. */
export class InvalidArgumentError extends ApiError {}
/** `IDEMPOTENCY_CONFLICT`: the key was already used for a different request. */
export class IdempotencyConflictError extends ApiError {}
/** `FAILED_PRECONDITION`: the run or interaction is not in a state that allows this. */
export class FailedPreconditionError extends ApiError {}
/** The worker does not advertise a capability the call needs (S4); see `metadata.capability`. */
export class CapabilityMissingError extends FailedPreconditionError {}
/** `RESOURCE_EXHAUSTED`, or a message over a size cap refused locally (C7). */
export class ResourceExhaustedError extends ApiError {
  /**
   * Milliseconds the worker asked the caller to wait before trying again (its
   * `google.rpc.RetryInfo`, sent with `CREATE_RATE_LIMIT`), or `null`.
   */
  readonly retryDelayMs: number | null;

  constructor(message: string, details: ErrorDetails & { readonly retryDelayMs?: number | null } = {}) {
    super(message, details);
    this.retryDelayMs = details.retryDelayMs ?? null;
  }
}
/** `DATA_LOSS`: the worker's journal failed its integrity check. */
export class DataLossError extends ApiError {}
/** `INTERNAL` or another server fault without a more specific meaning. */
export class InternalServerError extends ApiError {}

// --- transport, watch and protocol -----------------------------------------------------

/** The call reached no definite answer: connection lost, worker unavailable, aborted. */
export class TransportError extends ColossusError {}
/** The per-call timeout expired. */
export class DeadlineExceededError extends TransportError {}
/** A watch delivered no event for longer than its `idleTimeout`. */
export class WatchIdleTimeoutError extends TransportError {}
/** The caller's `AbortSignal` fired. */
export class AbortedError extends TransportError {}
/**
 * A mutation failed in a way that leaves its effect unknown (S2). The SDK never repeats it;
 * repeat `runs.create` with `error.idempotencyKey` to learn the outcome safely.
 */
export class OutcomeUnknownError extends ColossusError {}
/** The worker broke the contract (altered replay, wrong run, bad stream order...). */
export class ProtocolViolationError extends ColossusError {}
/** A watch received a sequence beyond `lastSequence + 1` (S1). */
export class WatchGapError extends ProtocolViolationError {}
/** Downloaded bytes do not match the artifact's declared size or SHA-256 (S6). */
export class ArtifactIntegrityError extends ProtocolViolationError {}
/** The sidecar worker failed to start, broke the bootstrap protocol or kept exiting. */
export class SidecarError extends ColossusError {}
/** The client was used after `close()`. */
export class ClientClosedError extends ColossusError {}

// The brand of each class, named by string: a bundler may rename the class binding itself.
for (const [name, cls] of Object.entries({
  ColossusError,
  TrustError,
  DescriptorError,
  CertificateError,
  PinMismatchError,
  TlsPolicyError,
  IncompatibleServerError,
  CredentialError,
  ApiError,
  AuthenticationError,
  PermissionDeniedError,
  NotFoundError,
  InvalidArgumentError,
  IdempotencyConflictError,
  FailedPreconditionError,
  CapabilityMissingError,
  ResourceExhaustedError,
  DataLossError,
  InternalServerError,
  TransportError,
  DeadlineExceededError,
  WatchIdleTimeoutError,
  AbortedError,
  OutcomeUnknownError,
  ProtocolViolationError,
  WatchGapError,
  ArtifactIntegrityError,
  SidecarError,
  ClientClosedError,
})) {
  BRANDS.set(cls, Symbol.for(`colossus-sdk.error.${name}`));
}

/** A local refusal of a malformed argument, naming the field. */
export function invalidArgument(message: string, field: string, reason: ReasonName = "FIELD_INVALID"): InvalidArgumentError {
  return new InvalidArgumentError(message, { reason, metadata: { field } });
}
