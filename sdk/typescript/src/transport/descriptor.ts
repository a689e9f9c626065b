/**
 * The daemon's discovery files (C1-C3). They are readiness hints, never trust anchors:
 * accepted only when they agree with the identity the caller provisioned separately.
 */
import path from "node:path";
import { CertificateError, DescriptorError, PinMismatchError } from "../errors.js";
import { parseLeafCertificate, type LeafCertificate } from "./certificate.js";
import { parseEndpoint, type Endpoint } from "./endpoint.js";
import { API_VERSION, isOpaqueId, isPin } from "./grammar.js";
import { checkPrivateDirectory, readOwnerOnlyFile } from "./owner-only-file.js";
import { parseStrictObject, StrictJsonError } from "./strict-json.js";

export const ENDPOINT_FILE = "endpoint.json";
export const CERTIFICATE_FILE = "certificate.pem";
export const MAX_DESCRIPTOR_BYTES = 4 * 1024;
export const MAX_CERTIFICATE_BYTES = 16 * 1024;
/** A process ID is a signed 32-bit pid_t, so a larger pid cannot name a real process. */
const MAX_PID = 2_147_483_647;
const MEMBERS = ["api_version", "certificate_sha256", "endpoint", "instance_id", "pid"];

/** A validated `endpoint.json`. */
export interface Descriptor {
  readonly endpoint: Endpoint;
  readonly instanceId: string;
  readonly pid: number;
  readonly apiVersion: string;
  readonly certificateSha256: string;
}

function fail(message: string, field?: string): DescriptorError {
  return new DescriptorError(message, { reason: "DESCRIPTOR_INVALID", metadata: field === undefined ? {} : { field } });
}

/** Validates the bytes of `endpoint.json` (C1). */
export function parseDescriptor(raw: Uint8Array): Descriptor {
  if (raw.length > MAX_DESCRIPTOR_BYTES) throw fail("endpoint.json is larger than 4 KiB");
  let obj;
  try {
    obj = parseStrictObject(raw);
  } catch (error) {
    const detail = error instanceof StrictJsonError ? error.message : "invalid";
    throw fail(`endpoint.json is not one strict JSON object (${detail})`);
  }
  const keys = Object.keys(obj).sort();
  const unknown = keys.filter((k) => !MEMBERS.includes(k));
  const missing = MEMBERS.filter((k) => !keys.includes(k));
  if (unknown.length > 0 || missing.length > 0) {
    throw fail(
      `endpoint.json members are wrong (unknown: ${JSON.stringify(unknown.map((k) => k.slice(0, 64)))}, missing: ${JSON.stringify(missing)})`,
    );
  }
  const endpoint = parseEndpoint(obj["endpoint"]);
  if (typeof endpoint === "string") throw fail(endpoint, "endpoint");
  const instanceId = obj["instance_id"];
  if (!isOpaqueId(instanceId)) throw fail("instance_id must be 1-64 characters of [A-Za-z0-9_-]", "instance_id");
  const pid = obj["pid"];
  if (typeof pid !== "number" || pid <= 0 || pid > MAX_PID) throw fail(`pid must be an integer from 1 to ${MAX_PID}`, "pid");
  if (obj["api_version"] !== API_VERSION) throw fail(`api_version must be "${API_VERSION}"`, "api_version");
  const pin = obj["certificate_sha256"];
  if (!isPin(pin)) throw fail("certificate_sha256 must be 64 lower-case hex characters", "certificate_sha256");
  return Object.freeze({ endpoint, instanceId, pid, apiVersion: API_VERSION, certificateSha256: pin });
}

/** A descriptor and certificate that agree with each other and with the provisioned identity. */
export interface DiscoveredWorker {
  readonly descriptor: Descriptor;
  readonly certificate: LeafCertificate;
}

/** Reads and cross-checks both discovery files; the expected values come from the caller only (C3). */
export async function discover(
  publicApiDir: string,
  expectedInstanceId: string,
  expectedPin: string,
): Promise<DiscoveredWorker> {
  // The folder check and both reads run at once: each file is five file-system round trips,
  // which made discovery most of what connect adds over a raw transport. Every read is safe
  // in a folder an attacker controls, and the verdicts keep their order: folder, descriptor,
  // certificate (a read whose verdict is never reached has nobody to report its failure to).
  const folder = checkPrivateDirectory(publicApiDir, (m) => fail(m), "the public API directory");
  const descriptorBytes = readOwnerOnlyFile(path.join(publicApiDir, ENDPOINT_FILE), MAX_DESCRIPTOR_BYTES, (m) => fail(m));
  const pemBytes = readOwnerOnlyFile(
    path.join(publicApiDir, CERTIFICATE_FILE),
    MAX_CERTIFICATE_BYTES,
    (m) => new CertificateError(m, { reason: "CERTIFICATE_INVALID" }),
  );
  for (const read of [descriptorBytes, pemBytes]) read.catch(() => undefined);
  await folder;
  const descriptor = parseDescriptor(await descriptorBytes);
  if (descriptor.certificateSha256 !== expectedPin) {
    throw new PinMismatchError("endpoint.json names a certificate other than the provisioned pin", {
      reason: "PIN_MISMATCH",
    });
  }
  if (descriptor.instanceId !== expectedInstanceId) {
    throw new PinMismatchError("endpoint.json names an instance other than the provisioned one", {
      reason: "INSTANCE_MISMATCH",
    });
  }
  const pem = await pemBytes;
  const certificate = parseLeafCertificate(pem, descriptor.endpoint.host);
  if (certificate.sha256 !== expectedPin) {
    throw new PinMismatchError("certificate.pem does not hash to the provisioned pin", { reason: "PIN_MISMATCH" });
  }
  return Object.freeze({ descriptor, certificate });
}
