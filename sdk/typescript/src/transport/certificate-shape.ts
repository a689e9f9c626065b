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

/** Walks every element below, so a non-DER length or primitive anywhere throws. */
function walk(der: Uint8Array, list: readonly Element[]): void {
  for (const e of list) {
    if (e.tag & 0x20) walk(der, children(der, e));
    else if (!isDerPrimitive(e.tag, der.subarray(e.start, e.end))) throw new Error("malformed DER primitive");
  }
}

/** BOOLEAN, INTEGER, BIT STRING and OBJECT IDENTIFIER in their one DER form. */
function isDerPrimitive(tag: number, c: Uint8Array): boolean {
  const first = c[0] ?? -1;
  const second = c[1] ?? -1;
  const last = c[c.length - 1] ?? -1;
  switch (tag) {
    case 0x01:
      return c.length === 1 && (first === 0x00 || first === 0xff);
    case 0x02:
      return c.length > 0 && !(c.length > 1 && ((first === 0 && second < 0x80) || (first === 0xff && second >= 0x80)));
    case 0x03:
      if (c.length <= 1) return c.length === 1 && first === 0;
      return first <= 7 && (last & ((1 << first) - 1)) === 0;
    case 0x06:
      return c.length > 0 && last < 0x80 && !c.some((b, i) => b === 0x80 && (i === 0 || (c[i - 1] ?? 0) < 0x80));
    default:
      return true;
  }
}

function bytesOf(der: Uint8Array, e: Element): Buffer {
  return Buffer.from(der.subarray(e.headerStart, e.end));
}

const VERSION_3 = "a003020102";
const P256_SPKI_PREFIX = "3059301306072a8648ce3d020106082a8648ce3d03010703420004";
const BASIC_CONSTRAINTS = "0603551d13";
const DER_TRUE = "0101ff";
const SAN = "0603551d11";
const KEY_USAGE = "0603551d0f";
const EXTENDED_KEY_USAGE = "0603551d25";
const SUBJECT_KEY_ID = "0603551d0e";
const AUTHORITY_KEY_ID = "0603551d23";
/** CA-only extensions, and those only a path validator would read: not on this leaf. */
const REFUSED_EXTENSIONS = new Set([
  "0603551d1e", // nameConstraints
  "0603551d1f", // cRLDistributionPoints
  "0603551d20", // certificatePolicies
  "0603551d21", // policyMappings
  "0603551d24", // policyConstraints
  "0603551d36", // inhibitAnyPolicy
  "06082b06010505070101", // authorityInfoAccess
]);
const PRINTABLE = /^[A-Za-z0-9 '()+,\-./:=?]*$/;
const DNS_NAME = /^[\x21-\x7e]+$/;
const UTF8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
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
    const timeOk = (t: Element): boolean => isTime(t.tag, Buffer.from(der.subarray(t.start, t.end)).toString("latin1"));
    if (times.length !== 2 || !times.every(timeOk)) return "the certificate's validity times are malformed";
    for (const name of [tbs[3], tbs[5]]) {
      const problem = nameProblem(der, name as Element);
      if (problem !== undefined) return problem;
    }
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
      const v = inner[0] as Element;
      if (REFUSED_EXTENSIONS.has(hex(oid))) return "the certificate carries an extension a leaf may not have";
      const parts = v.tag & 0x20 ? children(der, v) : [];
      const tags = parts.map((e) => e.tag.toString(16)).join("");
      const shapes: Readonly<Record<string, boolean>> = {
        [KEY_USAGE]: v.tag === 0x03 && v.end - v.start >= 2,
        [EXTENDED_KEY_USAGE]: v.tag === 0x30 && parts.length > 0 && parts.every((e) => e.tag === 0x06),
        [SUBJECT_KEY_ID]: v.tag === 0x04,
        [AUTHORITY_KEY_ID]: v.tag === 0x30 && ["80", "a182", "80a182"].includes(tags),
      };
      if (shapes[hex(oid)] === false) return "a certificate extension's value has the wrong shape";
      if (hex(oid) === SAN) {
        const problem = sanProblem(der, inner[0] as Element);
        if (problem !== undefined) return problem;
      }
      if (hex(oid) === BASIC_CONSTRAINTS && Buffer.from(der.subarray(value.start, value.end)).toString("hex") !== "3000") {
        return "the certificate's BasicConstraints is not exactly CA=false (a CA, a path length or a non-DER encoding)";
      }
    }
    return undefined;
  } catch {
    return "the certificate's DER is malformed";
  }
}

/** UTCTime YYMMDDHHMMSSZ or GeneralizedTime YYYYMMDDHHMMSSZ naming a real instant. */
function isTime(tag: number, text: string): boolean {
  let year: number;
  let rest: string;
  if (tag === 0x17 && /^[0-9]{12}Z$/.test(text)) {
    year = Number(text.slice(0, 2));
    year += year >= 50 ? 1900 : 2000;
    rest = text.slice(2, 12);
  } else if (tag === 0x18 && /^[0-9]{14}Z$/.test(text)) {
    year = Number(text.slice(0, 4));
    rest = text.slice(4, 14);
  } else return false;
  const [month, day, hour, minute, second] = [0, 2, 4, 6, 8].map((i) => Number(rest.slice(i, i + 2))) as [
    number,
    number,
    number,
    number,
    number,
  ];
  if (year < 1 || month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59) return false;
  // Day 0 of the next month is the last day of this one (setUTCFullYear keeps years under 100).
  const last = new Date(0);
  last.setUTCFullYear(year, month, 0);
  return day <= last.getUTCDate();
}

function isText(der: Uint8Array, value: Element): boolean {
  const content = der.subarray(value.start, value.end);
  if (value.tag === 0x0c) {
    try {
      UTF8.decode(content);
      return true;
    } catch {
      return false;
    }
  }
  if (value.tag === 0x13) return PRINTABLE.test(Buffer.from(content).toString("latin1"));
  return value.tag === 0x16 && content.every((b) => b < 0x80);
}

/** A Name of RDNs whose values are UTF8String, PrintableString or IA5String, well formed. */
function nameProblem(der: Uint8Array, name: Element): string | undefined {
  if (name.tag !== 0x30) return "the certificate's issuer or subject is malformed";
  for (const rdn of children(der, name)) {
    const attributes = children(der, rdn);
    if (rdn.tag !== 0x31 || attributes.length === 0) return "the certificate's issuer or subject is malformed";
    for (const attribute of attributes) {
      const fields = children(der, attribute);
      const [oid, value] = fields;
      if (attribute.tag !== 0x30 || fields.length !== 2 || oid?.tag !== 0x06 || value === undefined || !isText(der, value)) {
        return "the certificate's issuer or subject holds a malformed value";
      }
    }
  }
  return undefined;
}

/** subjectAltName: IP addresses (4 or 16 bytes) and visible-ASCII DNS names only. */
function sanProblem(der: Uint8Array, value: Element): string | undefined {
  const names = value.tag === 0x30 ? children(der, value) : [];
  if (names.length === 0) return "the certificate's subjectAltName is malformed";
  for (const n of names) {
    const length = n.end - n.start;
    const ip = n.tag === 0x87 && (length === 4 || length === 16);
    const dns = n.tag === 0x82 && DNS_NAME.test(Buffer.from(der.subarray(n.start, n.end)).toString("latin1"));
    if (!ip && !dns) return "the certificate's subjectAltName holds an unsupported name";
  }
  return undefined;
}
