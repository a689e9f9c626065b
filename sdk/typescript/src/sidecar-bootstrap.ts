/**
 * The sidecar bootstrap protocol (W16): length-prefixed JSON frames over inherited pipes.
 * The reply is validated member by member with the daemon's rules before anything in it
 * is used; the bearer goes straight into an opaque {@link Bearer}.
 */
import { CertificateError, CredentialError, PinMismatchError, SidecarError } from "./errors.js";
import { Bearer } from "./transport/bearer.js";
import { parseLeafCertificate, type LeafCertificate } from "./transport/certificate.js";
import { parseEndpoint, type Endpoint } from "./transport/endpoint.js";
import { API_VERSION, isOpaqueId, isPin } from "./transport/grammar.js";
import { parseStrictObject, StrictJsonError } from "./transport/strict-json.js";

export const MAX_FRAME = 65_536;
export const BOOTSTRAP_VERSION = 1;
const REPLY_MEMBERS = ["api_version", "bearer", "certificate_pem", "certificate_sha256", "credential_id", "endpoint", "instance_id", "version"];

/** A validated bootstrap reply. */
export interface BootstrapReply {
  readonly endpoint: Endpoint;
  readonly instanceId: string;
  readonly certificate: LeafCertificate;
  readonly credentialId: string;
  readonly bearer: Bearer;
}

/** The request frame: version, state folder, application and grant. */
export function encodeRequest(request: {
  readonly stateDir: string;
  readonly applicationId: string;
  readonly scopes: readonly string[];
  readonly roles: readonly string[];
  readonly tools: readonly string[];
}): Buffer {
  const body = Buffer.from(
    JSON.stringify({
      version: BOOTSTRAP_VERSION,
      state_dir: request.stateDir,
      application_id: request.applicationId,
      grant: { scopes: request.scopes, roles: request.roles, tools: request.tools },
    }),
    "utf8",
  );
  if (body.length > MAX_FRAME) throw new SidecarError("the bootstrap request is larger than 64 KiB", { reason: "BOOTSTRAP_TOO_LARGE" });
  const header = Buffer.alloc(4);
  header.writeUInt32BE(body.length);
  return Buffer.concat([header, body]);
}

function malformed(what: string): SidecarError {
  return new SidecarError(`the bootstrap reply is malformed: ${what}`, { reason: "BOOTSTRAP_MALFORMED" });
}

function printable(value: unknown, limit: number): string {
  return (typeof value === "string" ? value : "").slice(0, limit).replace(/[^\x20-\x7e]/g, "?");
}

/** Validates one reply frame's body, everything before anything is used. */
export function parseReply(body: Uint8Array): BootstrapReply {
  let obj;
  try {
    obj = parseStrictObject(body);
  } catch (error) {
    throw malformed(error instanceof StrictJsonError ? error.message : "not JSON");
  }
  const version = obj["version"];
  if (version !== BOOTSTRAP_VERSION) throw new SidecarError("the bootstrap reply has an unknown version", { reason: "BOOTSTRAP_MALFORMED", metadata: { field: "version" } });
  if ("error" in obj) {
    const error = obj["error"];
    if (Object.keys(obj).length !== 2 || error === null || typeof error !== "object" || Array.isArray(error)) throw malformed("bad error reply");
    const fields = error as Record<string, unknown>;
    throw new SidecarError(`the sidecar refused to start: ${printable(fields["message"], 512)}`, {
      reason: "BOOTSTRAP_REFUSED",
      metadata: { code: printable(fields["code"], 64) || "unknown" },
    });
  }
  const keys = Object.keys(obj).sort();
  if (keys.length !== REPLY_MEMBERS.length || keys.some((k, i) => k !== REPLY_MEMBERS[i])) {
    const unknown = keys.filter((k) => !REPLY_MEMBERS.includes(k)).map((k) => k.slice(0, 64));
    const missing = REPLY_MEMBERS.filter((k) => !keys.includes(k));
    throw malformed(`members are wrong (unknown: ${JSON.stringify(unknown)}, missing: ${JSON.stringify(missing)})`);
  }
  const endpoint = parseEndpoint(obj["endpoint"]);
  if (typeof endpoint === "string") throw new SidecarError(endpoint, { reason: "BOOTSTRAP_MALFORMED", metadata: { field: "endpoint" } });
  if (!isOpaqueId(obj["instance_id"])) throw malformed("instance_id must be 1-64 characters of [A-Za-z0-9_-]");
  if (!isOpaqueId(obj["credential_id"])) throw malformed("credential_id must be 1-64 characters of [A-Za-z0-9_-]");
  if (obj["api_version"] !== API_VERSION) throw malformed(`api_version must be "${API_VERSION}"`);
  const pin = obj["certificate_sha256"];
  if (!isPin(pin)) throw malformed("certificate_sha256 must be 64 lower-case hex characters");
  const pem = obj["certificate_pem"];
  if (typeof pem !== "string" || /[^\x20-\x7e\r\n]/.test(pem) || pem.length > 16 * 1024) throw malformed("certificate_pem must be ASCII PEM of at most 16 KiB");
  let certificate: LeafCertificate;
  try {
    certificate = parseLeafCertificate(Buffer.from(pem, "ascii"), endpoint.host);
  } catch (error) {
    throw new SidecarError(error instanceof CertificateError ? error.message : "bad certificate", {
      reason: "BOOTSTRAP_MALFORMED",
      metadata: { field: "certificate_pem" },
    });
  }
  if (certificate.sha256 !== pin) throw new PinMismatchError("the bootstrap certificate does not hash to its pin", { reason: "PIN_MISMATCH" });
  let bearer: Bearer;
  try {
    bearer = new Bearer(obj["bearer"]);
  } catch (error) {
    if (error instanceof CredentialError) throw new SidecarError("the bootstrap bearer is malformed", {
        reason: "BOOTSTRAP_MALFORMED",
        metadata: { field: "bearer" },
      });
    throw error;
  }
  return Object.freeze({ endpoint, instanceId: obj["instance_id"], certificate, credentialId: obj["credential_id"], bearer });
}
