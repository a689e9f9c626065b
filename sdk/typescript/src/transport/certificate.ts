/**
 * The worker's leaf certificate (C2): exactly one PEM `CERTIFICATE` block and nothing else,
 * an end-entity (CA=false) with a P-256 key and, when asked, an IP SAN for the endpoint.
 * The SHA-256 of its DER is the pin everything else is compared with.
 */
import { createHash, X509Certificate } from "node:crypto";
import { CertificateError } from "../errors.js";
import { hasBasicConstraints, leafShapeProblem } from "./certificate-shape.js";

const PEM = /^-----BEGIN CERTIFICATE-----\r?\n((?:[A-Za-z0-9+/=]{1,76}\r?\n)+)-----END CERTIFICATE-----(?:\r?\n)?$/;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** A validated leaf certificate. */
export interface LeafCertificate {
  readonly der: Buffer;
  /** Lower-case hex SHA-256 of `der`: the pin. */
  readonly sha256: string;
  /** A canonical PEM of `der`: the connection's only trust anchor. */
  readonly pem: string;
}

export function sha256Hex(data: Uint8Array): string {
  return createHash("sha256").update(data).digest("hex");
}

/** Validates one PEM leaf; with `endpointHost`, also requires an IP SAN for it. */
export function parseLeafCertificate(pem: Uint8Array, endpointHost?: string): LeafCertificate {
  const text = Buffer.from(pem).toString("latin1");
  const match = PEM.exec(text);
  if (match === null) {
    throw new CertificateError("the certificate must be exactly one PEM CERTIFICATE block with nothing else", {
      reason: "CERTIFICATE_INVALID",
    });
  }
  const body = (match[1] ?? "").replace(/\r?\n/g, "");
  if (!BASE64.test(body)) {
    throw new CertificateError("the certificate's base64 body is malformed", { reason: "CERTIFICATE_INVALID" });
  }
  const der = Buffer.from(body, "base64");
  // Only the canonical encoding: Node's decoder ignores non-zero unused bits.
  if (der.toString("base64") !== body) {
    throw new CertificateError("the certificate's base64 body is not canonical", { reason: "CERTIFICATE_INVALID" });
  }
  return validateLeafDer(der, endpointHost);
}

/** Checks a DER certificate: CA=false, P-256 key, loopback IP SAN when asked. */
export function validateLeafDer(der: Buffer, endpointHost?: string): LeafCertificate {
  const problem = leafShapeProblem(der);
  if (problem !== undefined) throw new CertificateError(problem, { reason: "CERTIFICATE_INVALID" });
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(der);
  } catch {
    throw new CertificateError("the certificate is not valid DER X.509", { reason: "CERTIFICATE_INVALID" });
  }
  if (!cert.raw.equals(der)) {
    throw new CertificateError("the certificate has trailing bytes after its DER", { reason: "CERTIFICATE_INVALID" });
  }
  let constrained: boolean;
  try {
    constrained = hasBasicConstraints(der);
  } catch {
    throw new CertificateError("the certificate's extensions are malformed", { reason: "CERTIFICATE_INVALID" });
  }
  if (!constrained) {
    throw new CertificateError("the certificate has no BasicConstraints extension", { reason: "CERTIFICATE_INVALID" });
  }
  if (cert.ca) {
    throw new CertificateError("the certificate is a CA certificate; a leaf is required", { reason: "CERTIFICATE_INVALID" });
  }
  let key;
  try {
    key = cert.publicKey;
  } catch {
    // A point off the curve: OpenSSL refuses it when the key is read.
    throw new CertificateError("the certificate key is not a valid P-256 point", { reason: "CERTIFICATE_INVALID" });
  }
  if (key.asymmetricKeyType !== "ec" || key.asymmetricKeyDetails?.namedCurve !== "prime256v1") {
    throw new CertificateError("the certificate key must be ECDSA P-256", { reason: "CERTIFICATE_INVALID" });
  }
  if (endpointHost !== undefined && cert.checkIP(endpointHost) === undefined) {
    throw new CertificateError("the certificate has no IP SAN for the endpoint address", { reason: "CERTIFICATE_INVALID" });
  }
  const body = der.toString("base64").replace(/.{1,64}/g, "$&\n");
  return Object.freeze({
    der,
    sha256: sha256Hex(der),
    pem: `-----BEGIN CERTIFICATE-----\n${body}-----END CERTIFICATE-----\n`,
  });
}
