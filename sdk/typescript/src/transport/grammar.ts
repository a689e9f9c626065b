/** The token grammars shared by the descriptor, the bootstrap reply and request checks. */

const PIN = /^[0-9a-f]{64}$/;
const OPAQUE_ID = /^[A-Za-z0-9_-]{1,64}$/;

/** 64 lower-case hex characters: the SHA-256 pin format. */
export function isPin(value: unknown): value is string {
  return typeof value === "string" && PIN.test(value);
}

/** 1-64 characters of `[A-Za-z0-9_-]` (instance, run, interaction, artifact IDs). */
export function isOpaqueId(value: unknown): value is string {
  return typeof value === "string" && OPAQUE_ID.test(value);
}

export const API_VERSION = "v1alpha1";
