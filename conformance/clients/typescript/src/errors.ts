// The SDK's error classes to the protocol's language-neutral kinds, in one table.
import type * as T from "colossus-sdk";
import { sdk } from "./sdk.js";

// Most specific first: the first `instanceof` match wins.
const KINDS: ReadonlyArray<readonly [abstract new (...args: never[]) => Error, string]> = [
  [sdk.IncompatibleServerError, "compatibility"],
  [sdk.TrustError, "trust"],
  [sdk.CredentialError, "credential"],
  [sdk.SidecarError, "sidecar"],
  [sdk.WatchGapError, "watch_gap"],
  [sdk.ArtifactIntegrityError, "integrity"],
  [sdk.ProtocolViolationError, "protocol_violation"],
  [sdk.OutcomeUnknownError, "outcome_unknown"],
  [sdk.DeadlineExceededError, "timeout"],
  [sdk.WatchIdleTimeoutError, "timeout"],
  [sdk.TransportError, "transport"],
  [sdk.AuthenticationError, "authentication"],
  [sdk.PermissionDeniedError, "permission"],
  [sdk.NotFoundError, "not_found"],
  [sdk.IdempotencyConflictError, "idempotency_conflict"],
  [sdk.InvalidArgumentError, "invalid_argument"],
  [sdk.CapabilityMissingError, "capability_missing"],
  [sdk.FailedPreconditionError, "failed_precondition"],
  [sdk.ResourceExhaustedError, "resource_exhausted"],
  [sdk.DataLossError, "integrity"],
  [sdk.InternalServerError, "internal"],
];

export class Unsupported extends Error {}

export function errorView(error: unknown): { [key: string]: string | number | null } {
  if (error instanceof Unsupported) {
    return { kind: "unsupported", grpc_code: null, reason: null, sdk_type: "Unsupported", message: error.message };
  }
  let kind = "other";
  for (const [cls, name] of KINDS) {
    if (error instanceof cls) {
      kind = name;
      break;
    }
  }
  const isSdk = error instanceof sdk.ColossusError;
  const view: { [key: string]: string | number | null } = {
    kind,
    grpc_code: isSdk ? error.code : null,
    reason: isSdk ? error.reason : null,
    sdk_type: error instanceof Error ? error.name : typeof error,
    // SDK messages are built to be safe to show; the runner still checks for bearers.
    message: (isSdk ? error.toString() : String(error)).slice(0, 2000),
  };
  if (error instanceof sdk.ResourceExhaustedError && error.retryDelayMs !== null) view["retry_delay_seconds"] = error.retryDelayMs / 1000;
  return view;
}
