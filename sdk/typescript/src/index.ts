/**
 * colossus-sdk: the TypeScript client of the Colossus public application API
 * (`colossus.api.v1alpha1`) for Node.js. Everything public is exported here by name.
 */
export { Client, type ConnectOptions } from "./client.js";
export type { RequestOptions } from "./connection.js";
export { InMemoryCredentialProvider, KeyringCredentialProvider, type CredentialProvider } from "./credentials.js";
export {
  AbortedError,
  ApiError,
  ArtifactIntegrityError,
  AuthenticationError,
  CapabilityMissingError,
  CertificateError,
  ClientClosedError,
  ColossusError,
  CredentialError,
  DataLossError,
  DeadlineExceededError,
  DescriptorError,
  FailedPreconditionError,
  IdempotencyConflictError,
  IncompatibleServerError,
  InternalServerError,
  InvalidArgumentError,
  NotFoundError,
  OutcomeUnknownError,
  PermissionDeniedError,
  PinMismatchError,
  ProtocolViolationError,
  ResourceExhaustedError,
  SidecarError,
  TlsPolicyError,
  TransportError,
  TrustError,
  WatchGapError,
  WatchIdleTimeoutError,
  type ErrorDetails,
  type StatusCode,
} from "./errors.js";
export { silentLogger, type Logger } from "./logger.js";
export { Reason, type KnownReason, type ReasonName } from "./reasons.js";
export { isTerminalStatus } from "./models.js";
export type * from "./models.js";
export type { ClientOptions, DaemonOptions, SidecarOptions, TraceContextProvider } from "./options.js";
export { TextStream, type WaitOptions } from "./outcome.js";
export { RunPager } from "./pagination.js";
export type { RateLimitRetryOptions } from "./rate-limit.js";
export type { CreateRunOptions } from "./requests.js";
export { DEFAULT_RETRY as DEFAULT_RETRY_POLICY, type ResolvedRetryPolicy, type RetryPolicy } from "./retry.js";
export type { ListRunsOptions, Runs } from "./runs.js";
export type { Artifacts, UploadOptions } from "./artifacts.js";
export { Watch, type ReconnectInfo, type WatchOptions } from "./watch.js";
export type { ReplayWindow } from "./watch-core.js";
export type { DerivedClientOptions } from "./with-options.js";

/** The SDK version. */
export const VERSION = "0.1.0";
