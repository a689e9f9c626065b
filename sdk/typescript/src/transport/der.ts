/**
 * Just enough DER to find a certificate's extensions. Node's `X509Certificate` reports
 * `ca: false` both for BasicConstraints CA=false and for a certificate with no
 * BasicConstraints at all; the contract wants the extension present, so it is looked up.
 */

interface Element {
  readonly tag: number;
  /** Where the tag byte is. */
  readonly headerStart: number;
  /** Where the content starts. */
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
    // DER: the shortest form only (no leading zero byte, no long form under 128).
    if (der[start] === 0 || start + count > limit) throw new Error("non-minimal DER length");
    length = 0;
    for (let i = 0; i < count; i += 1) length = length * 256 + (der[start + i] ?? 0);
    start += count;
    if (length < 0x80) throw new Error("non-minimal DER length");
  }
  const end = start + length;
  if (end > limit) throw new Error("DER element overruns its parent");
  return { tag, headerStart: pos, start, end };
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

function elementsOf(der: Uint8Array, start: number, end: number): Element[] {
  return children(der, { tag: 0, headerStart: start, start, end });
}

/** Walks every constructed element below, so a non-DER length anywhere throws. */
function walk(der: Uint8Array, list: readonly Element[]): void {
  for (const e of list) if (e.tag & 0x20) walk(der, children(der, e));
}

function bytesOf(der: Uint8Array, e: Element): Buffer {
  return Buffer.from(der.subarray(e.headerStart, e.end));
}

const VERSION_3 = "a003020102";
const P256_SPKI_PREFIX = "3059301306072a8648ce3d020106082a8648ce3d03010703420004";
const BASIC_CONSTRAINTS = "0603551d13";
const DER_TRUE = "0101ff";
const TIMES: Readonly<Record<number, RegExp>> = { 0x17: /^[0-9]{12}Z$/, 0x18: /^[0-9]{14}Z$/ };
const AFTER_KEY = ["a3", "81a3", "82a3", "8182a3"];

/**
 * The shape every SDK requires of a leaf beyond what its X.509 parser checks (the same rules
 * in the Python and Go SDKs, so the three give one verdict): a v3 certificate with a positive
 * serial, the same signature algorithm inside and outside the tbsCertificate, RFC 5280 times,
 * an uncompressed P-256 key (checked before OpenSSL reads the key: a malformed EC key can
 * abort the Node process), nothing after the extensions, and DER extension values,
 * BasicConstraints being exactly the empty SEQUENCE (CA=false). Returns why it is refused.
 */
export function leafShapeProblem(der: Uint8Array): string | undefined {
  try {
    const certificate = element(der, 0, der.length);
    if (certificate.tag !== 0x30 || certificate.end !== der.length) return "the certificate's DER is not one SEQUENCE";
    walk(der, [certificate]);
    const outer = children(der, certificate);
    if (outer.map((e) => e.tag).join() !== "48,48,3") return "the certificate is not tbsCertificate, algorithm, signature";
    const [tbsElement, algorithm] = outer as [Element, Element, Element];
    const tbs = children(der, tbsElement);
    const hex = (e: Element | undefined): string => (e === undefined ? "" : bytesOf(der, e).toString("hex"));
    if (tbs.length < 8 || hex(tbs[0]) !== VERSION_3) return "the certificate must be X.509 version 3";
    const serial = tbs[1] as Element;
    const serialHex = Buffer.from(der.subarray(serial.start, serial.end)).toString("hex");
    if (serial.tag !== 0x02 || serialHex === "" || serialHex === "00" || (der[serial.start] ?? 0) >= 0x80) {
      return "the certificate's serial number is not positive";
    }
    if (hex(tbs[2]) !== hex(algorithm)) return "the certificate names two different signature algorithms";
    const times = children(der, tbs[4] as Element);
    const timeOk = (t: Element): boolean =>
      TIMES[t.tag]?.test(Buffer.from(der.subarray(t.start, t.end)).toString("latin1")) === true;
    if (times.length !== 2 || !times.every(timeOk)) return "the certificate's validity times are malformed";
    const spki = hex(tbs[6]);
    if (spki.length !== P256_SPKI_PREFIX.length + 128 || !spki.startsWith(P256_SPKI_PREFIX)) {
      return "the certificate key must be an uncompressed ECDSA P-256 point";
    }
    if (!AFTER_KEY.includes(tbs.slice(7).map((e) => e.tag.toString(16)).join(""))) {
      return "the certificate has unexpected fields after its key";
    }
    const wrapper = children(der, tbs[tbs.length - 1] as Element);
    if (wrapper.length !== 1 || wrapper[0]?.tag !== 0x30) return "the certificate's extensions are malformed";
    for (const extension of children(der, wrapper[0])) {
      let fields = children(der, extension);
      if (fields.length === 3 && hex(fields[1]) === DER_TRUE) fields = [fields[0] as Element, fields[2] as Element];
      const [oid, value] = fields;
      if (extension.tag !== 0x30 || fields.length !== 2 || oid?.tag !== 0x06 || value?.tag !== 0x04) {
        return "the certificate has a malformed extension";
      }
      const inner = elementsOf(der, value.start, value.end);
      if (inner.length !== 1) return "a certificate extension's value is not one DER element";
      walk(der, inner);
      if (hex(oid) === BASIC_CONSTRAINTS && Buffer.from(der.subarray(value.start, value.end)).toString("hex") !== "3000") {
        return "the certificate's BasicConstraints is not exactly CA=false (a CA, a path length or a non-DER encoding)";
      }
    }
    return undefined;
  } catch {
    return "the certificate's DER is malformed";
  }
}
