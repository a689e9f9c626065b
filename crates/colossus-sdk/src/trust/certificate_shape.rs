//! The DER shape every SDK of the family requires of the worker's leaf (C2), checked byte
//! by byte. X.509 parsers differ in what they let through; these rules are the same in all
//! four SDKs, so each gives the same verdict on the same bytes
//! (conformance/parsers_diff compares them): a v3 certificate with a positive serial, the
//! same signature algorithm inside and outside the tbsCertificate, RFC 5280 times, an
//! uncompressed P-256 key, nothing after the extensions, DER extension values, and
//! BasicConstraints exactly the empty SEQUENCE (CA=false).

use crate::{Error, Kind, Result, reasons};

const VERSION_3: &[u8] = &[0xa0, 0x03, 0x02, 0x01, 0x02];
/// SubjectPublicKeyInfo of an uncompressed P-256 point, up to the point's 64 bytes.
pub(crate) const P256_SPKI_PREFIX: &[u8] = &[
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a,
    0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00, 0x04,
];
pub(crate) const OID_BASIC_CONSTRAINTS: &[u8] = &[0x06, 0x03, 0x55, 0x1d, 0x13];
pub(crate) const OID_SAN: &[u8] = &[0x06, 0x03, 0x55, 0x1d, 0x11];
const DER_TRUE: &[u8] = &[0x01, 0x01, 0xff];
const OID_KEY_USAGE: &[u8] = &[0x06, 0x03, 0x55, 0x1d, 0x0f];
const OID_EXTENDED_KEY_USAGE: &[u8] = &[0x06, 0x03, 0x55, 0x1d, 0x25];
const OID_SUBJECT_KEY_ID: &[u8] = &[0x06, 0x03, 0x55, 0x1d, 0x0e];
const OID_AUTHORITY_KEY_ID: &[u8] = &[0x06, 0x03, 0x55, 0x1d, 0x23];
/// CA-only extensions, and those only a path validator would read: not on this leaf.
const REFUSED_EXTENSIONS: [&[u8]; 7] = [
    &[0x06, 0x03, 0x55, 0x1d, 0x1e], // nameConstraints
    &[0x06, 0x03, 0x55, 0x1d, 0x1f], // cRLDistributionPoints
    &[0x06, 0x03, 0x55, 0x1d, 0x20], // certificatePolicies
    &[0x06, 0x03, 0x55, 0x1d, 0x21], // policyMappings
    &[0x06, 0x03, 0x55, 0x1d, 0x24], // policyConstraints
    &[0x06, 0x03, 0x55, 0x1d, 0x36], // inhibitAnyPolicy
    &[0x06, 0x08, 0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x01, 0x01], // authorityInfoAccess
];

pub(crate) fn certificate_error(message: impl Into<String>) -> Error {
    Error::local(Kind::Certificate, reasons::CERTIFICATE_INVALID, message)
        .with_metadata("field", "certificate")
}

/// One TLV: its tag, the whole encoding and its content.
#[derive(Clone, Copy)]
pub(crate) struct Element<'a> {
    pub(crate) tag: u8,
    pub(crate) whole: &'a [u8],
    pub(crate) content: &'a [u8],
}

/// Splits `data` into its DER elements, accepting only minimal definite lengths.
pub(crate) fn elements(data: &[u8]) -> Result<Vec<Element<'_>>> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < data.len() {
        if data.len() - pos < 2 {
            return Err(certificate_error("the certificate's DER is truncated"));
        }
        let mut start = pos + 2;
        let mut length = usize::from(data[pos + 1]);
        if length >= 0x80 {
            let count = length & 0x7f;
            if !(1..=4).contains(&count) || start + count > data.len() || data[start] == 0 {
                return Err(certificate_error(
                    "the certificate's DER length is malformed",
                ));
            }
            length = data[start..start + count]
                .iter()
                .fold(0usize, |n, b| (n << 8) | usize::from(*b));
            start += count;
            if length < 0x80 {
                return Err(certificate_error(
                    "the certificate's DER length is malformed",
                ));
            }
        }
        let end = start
            .checked_add(length)
            .filter(|end| *end <= data.len())
            .ok_or_else(|| certificate_error("the certificate's DER is truncated"))?;
        out.push(Element {
            tag: data[pos],
            whole: &data[pos..end],
            content: &data[start..end],
        });
        pos = end;
    }
    Ok(out)
}

/// Parses every element below, so a non-DER length or primitive anywhere is refused.
fn walk(elements_: &[Element<'_>]) -> Result<()> {
    for e in elements_ {
        if e.tag & 0x20 == 0 {
            if !is_der_primitive(e.tag, e.content) {
                return Err(certificate_error(format!(
                    "the certificate holds a malformed DER value (tag {:#04x})",
                    e.tag
                )));
            }
            continue;
        }
        walk(&elements(e.content)?)?;
    }
    Ok(())
}

/// BOOLEAN, INTEGER, BIT STRING and OBJECT IDENTIFIER in their one DER form (other
/// primitives are not checked here).
fn is_der_primitive(tag: u8, c: &[u8]) -> bool {
    match tag {
        0x01 => c.len() == 1 && (c[0] == 0x00 || c[0] == 0xff),
        0x02 => {
            let redundant =
                c.len() > 1 && ((c[0] == 0 && c[1] < 0x80) || (c[0] == 0xff && c[1] >= 0x80));
            !c.is_empty() && !redundant
        }
        0x03 => match c.len() {
            0 => false,
            1 => c[0] == 0,
            _ => c[0] <= 7 && c[c.len() - 1] & ((1u8 << c[0]) - 1) == 0,
        },
        0x06 => {
            !c.is_empty()
                && c[c.len() - 1] < 0x80
                && !c
                    .iter()
                    .enumerate()
                    .any(|(i, b)| *b == 0x80 && (i == 0 || c[i - 1] < 0x80))
        }
        _ => true,
    }
}

fn tags_of(elements_: &[Element<'_>]) -> Vec<u8> {
    elements_.iter().map(|e| e.tag).collect()
}

/// The tbsCertificate's elements of a certificate that passed [`check_leaf_shape`].
pub(crate) fn tbs_elements(der: &[u8]) -> Result<Vec<Element<'_>>> {
    let whole = elements(der)?;
    let outer = elements(whole[0].content)?;
    elements(outer[0].content)
}

/// The extensions (each `SEQUENCE { oid, [critical], OCTET STRING }`) of such a certificate.
pub(crate) fn extension_elements<'a>(tbs: &[Element<'a>]) -> Result<Vec<Element<'a>>> {
    let wrapper = elements(tbs[tbs.len() - 1].content)?;
    elements(wrapper[0].content)
}

/// Checks the shape rules on a whole DER certificate.
pub(crate) fn check_leaf_shape(der: &[u8]) -> Result<()> {
    let whole = elements(der)?;
    if whole.len() != 1 || whole[0].tag != 0x30 {
        return Err(certificate_error(
            "the certificate's DER is not one SEQUENCE",
        ));
    }
    walk(&whole)?;
    let outer = elements(whole[0].content)?;
    if tags_of(&outer) != [0x30, 0x30, 0x03] {
        return Err(certificate_error(
            "the certificate is not tbsCertificate, algorithm, signature",
        ));
    }
    let tbs = elements(outer[0].content)?;
    if tbs.len() < 8 || tbs[0].whole != VERSION_3 {
        return Err(certificate_error("the certificate must be X.509 version 3"));
    }
    let serial = tbs[1];
    if serial.tag != 0x02
        || serial.content.is_empty()
        || serial.content[0] >= 0x80
        || serial.content == [0]
    {
        return Err(certificate_error(
            "the certificate's serial number is not positive",
        ));
    }
    if tbs[2].whole != outer[1].whole {
        return Err(certificate_error(
            "the certificate names two different signature algorithms",
        ));
    }
    let times = elements(tbs[4].content).ok().filter(|t| t.len() == 2);
    if !times.is_some_and(|t| t.iter().all(is_der_time)) {
        return Err(certificate_error(
            "the certificate's validity times are malformed",
        ));
    }
    for name in [tbs[3], tbs[5]] {
        check_name_shape(name)?;
    }
    if tbs[6].whole.len() != P256_SPKI_PREFIX.len() + 64
        || !tbs[6].whole.starts_with(P256_SPKI_PREFIX)
    {
        return Err(certificate_error(
            "the certificate key must be an uncompressed ECDSA P-256 point",
        ));
    }
    match tags_of(&tbs[7..]).as_slice() {
        [0xa3] | [0x81, 0xa3] | [0x82, 0xa3] | [0x81, 0x82, 0xa3] => {}
        _ => {
            return Err(certificate_error(
                "the certificate has unexpected fields after its key",
            ));
        }
    }
    let wrapper = elements(tbs[tbs.len() - 1].content)
        .ok()
        .filter(|w| w.len() == 1 && w[0].tag == 0x30)
        .ok_or_else(|| certificate_error("the certificate's extensions are malformed"))?;
    for e in elements(wrapper[0].content)? {
        check_extension_shape(e)?;
    }
    Ok(())
}

/// An extension's OID and its value's one element (the OCTET STRING's content).
pub(crate) fn extension_parts<'a>(e: Element<'a>) -> Result<(&'a [u8], Element<'a>)> {
    let mut fields = elements(e.content)?;
    if e.tag == 0x30 && fields.len() == 3 && fields[1].whole == DER_TRUE {
        fields.remove(1);
    }
    if e.tag != 0x30 || tags_of(&fields) != [0x06, 0x04] {
        return Err(certificate_error(
            "the certificate has a malformed extension",
        ));
    }
    let value = elements(fields[1].content)
        .ok()
        .filter(|v| v.len() == 1 && walk(v).is_ok())
        .ok_or_else(|| {
            certificate_error("a certificate extension's value is not one DER element")
        })?;
    Ok((fields[0].whole, value[0]))
}

fn check_extension_shape(e: Element<'_>) -> Result<()> {
    let (oid, v) = extension_parts(e)?;
    if REFUSED_EXTENSIONS.contains(&oid) {
        return Err(certificate_error(
            "the certificate carries an extension a leaf may not have",
        ));
    }
    let inner = if v.tag & 0x20 != 0 {
        elements(v.content).unwrap_or_default()
    } else {
        Vec::new()
    };
    let tags = tags_of(&inner);
    let shape_ok = match oid {
        OID_KEY_USAGE => v.tag == 0x03 && v.content.len() >= 2,
        OID_EXTENDED_KEY_USAGE => {
            v.tag == 0x30 && !inner.is_empty() && tags.iter().all(|t| *t == 0x06)
        }
        OID_SUBJECT_KEY_ID => v.tag == 0x04,
        OID_AUTHORITY_KEY_ID => {
            v.tag == 0x30 && matches!(tags.as_slice(), [0x80] | [0xa1, 0x82] | [0x80, 0xa1, 0x82])
        }
        _ => true,
    };
    if !shape_ok {
        return Err(certificate_error(
            "a certificate extension's value has the wrong shape",
        ));
    }
    if oid == OID_SAN {
        check_san_shape(v)?;
    }
    if oid == OID_BASIC_CONSTRAINTS && v.whole != [0x30, 0x00] {
        return Err(certificate_error(
            "the certificate's BasicConstraints is not exactly CA=false (a CA, a path length or a non-DER encoding)",
        ));
    }
    Ok(())
}

fn two_digits(b: &[u8]) -> u32 {
    u32::from(b[0] - b'0') * 10 + u32::from(b[1] - b'0')
}

/// UTCTime `YYMMDDHHMMSSZ` or GeneralizedTime `YYYYMMDDHHMMSSZ` naming a real instant.
fn is_der_time(t: &Element<'_>) -> bool {
    let c = t.content;
    let digits =
        |n: usize| c.len() == n + 1 && c[n] == b'Z' && c[..n].iter().all(u8::is_ascii_digit);
    let (year, rest) = match t.tag {
        0x17 if digits(12) => {
            let yy = two_digits(&c[..2]);
            (if yy >= 50 { 1900 + yy } else { 2000 + yy }, &c[2..12])
        }
        0x18 if digits(14) => (two_digits(&c[..2]) * 100 + two_digits(&c[2..4]), &c[4..14]),
        _ => return false,
    };
    let f: Vec<u32> = rest.chunks(2).map(two_digits).collect();
    let (month, day, hour, minute, second) = (f[0], f[1], f[2], f[3], f[4]);
    if year < 1 || !(1..=12).contains(&month) || day < 1 || hour > 23 || minute > 59 || second > 59
    {
        return false;
    }
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    day <= days
}

/// A Name of RDNs whose values are UTF8String, PrintableString or IA5String, well formed.
fn check_name_shape(name: Element<'_>) -> Result<()> {
    let malformed = || certificate_error("the certificate's issuer or subject is malformed");
    let rdns = elements(name.content).map_err(|_| malformed())?;
    if name.tag != 0x30 {
        return Err(malformed());
    }
    for rdn in rdns {
        let attributes = elements(rdn.content).map_err(|_| malformed())?;
        if rdn.tag != 0x31 || attributes.is_empty() {
            return Err(malformed());
        }
        for a in attributes {
            let ok = elements(a.content).is_ok_and(|f| {
                a.tag == 0x30 && f.len() == 2 && f[0].tag == 0x06 && is_der_text(f[1])
            });
            if !ok {
                return Err(certificate_error(
                    "the certificate's issuer or subject holds a malformed value",
                ));
            }
        }
    }
    Ok(())
}

fn is_der_text(v: Element<'_>) -> bool {
    match v.tag {
        0x0c => std::str::from_utf8(v.content).is_ok(),
        0x13 => v
            .content
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || b" '()+,-./:=?".contains(b)),
        0x16 => v.content.is_ascii(),
        _ => false,
    }
}

/// IP addresses (4 or 16 bytes) and visible-ASCII DNS names only.
fn check_san_shape(value: Element<'_>) -> Result<()> {
    let malformed = || certificate_error("the certificate's subjectAltName is malformed");
    let names = elements(value.content).map_err(|_| malformed())?;
    if value.tag != 0x30 || names.is_empty() {
        return Err(malformed());
    }
    for n in names {
        let ip = n.tag == 0x87 && (n.content.len() == 4 || n.content.len() == 16);
        let dns = n.tag == 0x82
            && !n.content.is_empty()
            && n.content.iter().all(|b| (0x21..=0x7e).contains(b));
        if !ip && !dns {
            return Err(certificate_error(
                "the certificate's subjectAltName holds an unsupported name",
            ));
        }
    }
    Ok(())
}
