/** Reads what a server's first TLS record says about the versions it accepts. */
import { TlsPolicyError, type TrustError } from "../errors.js";

const RECORD_ALERT = 21;
const RECORD_HANDSHAKE = 22;
const HANDSHAKE_SERVER_HELLO = 2;
const ALERT_PROTOCOL_VERSION = 70;
const EXTENSION_SUPPORTED_VERSIONS = 0x002b;

/** True when a plaintext ServerHello selects TLS 1.3 through `supported_versions`. */
function serverHelloSelectsTls13(hello: Buffer): boolean {
  // type(1) length(3) legacy_version(2) random(32) session_id<1> cipher(2) compression(1) extensions<2>
  let pos = 4 + 2 + 32;
  if (pos >= hello.length) return false;
  pos += 1 + (hello[pos] ?? 0) + 2 + 1;
  if (pos + 2 > hello.length) return false;
  const end = Math.min(hello.length, pos + 2 + hello.readUInt16BE(pos));
  pos += 2;
  while (pos + 4 <= end) {
    const type = hello.readUInt16BE(pos);
    const length = hello.readUInt16BE(pos + 2);
    if (type === EXTENSION_SUPPORTED_VERSIONS && length === 2 && pos + 6 <= end) return hello.readUInt16BE(pos + 4) === 0x0304;
    pos += 4 + length;
  }
  return false;
}

/**
 * Classifies a handshake that failed before it completed from what the server sent: an
 * alert or a ServerHello that does not select TLS 1.3 is a TLS policy refusal; fewer bytes
 * than an alert is no evidence at all (`null`).
 */
export function classifyServerBytes(bytes: Buffer): TrustError | null {
  if (bytes.length < 6) return null;
  const type = bytes[0];
  if (type === RECORD_ALERT) {
    const description = bytes[6];
    return new TlsPolicyError(
      description === ALERT_PROTOCOL_VERSION ? "the server does not speak TLS 1.3" : `the server refused the TLS handshake (alert ${description ?? "?"})`,
      { reason: description === ALERT_PROTOCOL_VERSION ? "TLS_VERSION" : "TLS_HANDSHAKE" },
    );
  }
  if (type === RECORD_HANDSHAKE && bytes[5] === HANDSHAKE_SERVER_HELLO) {
    if (!serverHelloSelectsTls13(bytes.subarray(5))) {
      return new TlsPolicyError("the server negotiated a TLS version other than 1.3", { reason: "TLS_VERSION" });
    }
    return new TlsPolicyError("the TLS 1.3 handshake with the server failed", { reason: "TLS_HANDSHAKE" });
  }
  return new TlsPolicyError("the server answered the TLS handshake with something else", { reason: "TLS_HANDSHAKE" });
}

/**
 * Classifies the first record a version probe received (its ClientHello offered TLS 1.2
 * and 1.3): `null` when the server chose TLS 1.3, so it is a genuine TLS 1.3 listener;
 * otherwise the policy refusal the record shows.
 */
export function classifyProbeAnswer(bytes: Buffer): TrustError | null {
  if (bytes[0] === RECORD_HANDSHAKE && bytes[5] === HANDSHAKE_SERVER_HELLO && serverHelloSelectsTls13(bytes.subarray(5))) return null;
  return classifyServerBytes(bytes) ?? new TlsPolicyError("the server broke off the TLS handshake", { reason: "TLS_HANDSHAKE" });
}
