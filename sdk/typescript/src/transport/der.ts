/**
 * Just enough DER to find a certificate's extensions. Node's `X509Certificate` reports
 * `ca: false` both for BasicConstraints CA=false and for a certificate with no
 * BasicConstraints at all; the contract wants the extension present, so it is looked up.
 */

interface Element {
  readonly tag: number;
  readonly start: number;
  readonly end: number;
}

function element(der: Uint8Array, pos: number, limit: number): Element {
  const tag = der[pos];
  let length = der[pos + 1];
  if (tag === undefined || length === undefined) throw new Error("truncated DER");
  let start = pos + 2;
  if (length & 0x80) {
    const count = length & 0x7f;
    if (count === 0 || count > 4) throw new Error("unsupported DER length");
    length = 0;
    for (let i = 0; i < count; i += 1) length = length * 256 + (der[start + i] ?? 0);
    start += count;
  }
  const end = start + length;
  if (end > limit) throw new Error("DER element overruns its parent");
  return { tag, start, end };
}

function children(der: Uint8Array, parent: Element): Element[] {
  const out: Element[] = [];
  for (let pos = parent.start; pos < parent.end; ) {
    const child = element(der, pos, parent.end);
    out.push(child);
    pos = child.end;
  }
  return out;
}

const BASIC_CONSTRAINTS_OID = [0x55, 0x1d, 0x13];

/**
 * True when the certificate carries a BasicConstraints extension; throws on malformed DER
 * and on an extension that appears twice (RFC 5280 allows one of each, and OpenSSL's `ca`
 * would read only one of two contradicting BasicConstraints).
 */
export function hasBasicConstraints(der: Uint8Array): boolean {
  const certificate = element(der, 0, der.length);
  const tbs = children(der, certificate)[0];
  if (tbs === undefined) throw new Error("no tbsCertificate");
  const extensions = children(der, tbs).find((e) => e.tag === 0xa3);
  if (extensions === undefined) return false;
  const list = children(der, extensions)[0];
  if (list === undefined) return false;
  const seen = new Set<string>();
  for (const extension of children(der, list)) {
    const oid = children(der, extension)[0];
    if (oid?.tag !== 0x06) throw new Error("extension without an OID");
    const key = Buffer.from(der.subarray(oid.start, oid.end)).toString("hex");
    if (seen.has(key)) throw new Error("extension present twice");
    seen.add(key);
  }
  return seen.has(Buffer.from(BASIC_CONSTRAINTS_OID).toString("hex"));
}
