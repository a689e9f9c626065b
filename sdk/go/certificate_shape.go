package colossus

// The DER shape every SDK requires of the worker's leaf (C2), checked byte by byte. X.509
// parsers differ in what they let through; these rules are the same in the four SDKs
// (sdk/python/.../_certificate_shape.py, sdk/typescript/src/transport/certificate-shape.ts,
// crates/colossus-sdk/src/trust/certificate_shape.rs),
// so each gives the same verdict on the same bytes (conformance/parsers_diff compares them).

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// The shape every SDK requires of a leaf beyond what its X.509 parser checks (the same rules
// in the Python and TypeScript SDKs, so the three give one verdict): a v3 certificate with a
// positive serial, the same signature algorithm inside and outside the tbsCertificate,
// RFC 5280 times, an uncompressed P-256 key, nothing after the extensions, and DER
// extension values, BasicConstraints being exactly the empty SEQUENCE (CA=false).
var (
	derVersion3         = []byte{0xa0, 0x03, 0x02, 0x01, 0x02}
	derP256SPKIPrefix   = []byte{0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00, 0x04}
	derBasicConstraints = []byte{0x06, 0x03, 0x55, 0x1d, 0x13}
	derTrue             = []byte{0x01, 0x01, 0xff}
	derSAN              = []byte{0x06, 0x03, 0x55, 0x1d, 0x11}
	derKeyUsage         = []byte{0x06, 0x03, 0x55, 0x1d, 0x0f}
	derExtendedKeyUsage = []byte{0x06, 0x03, 0x55, 0x1d, 0x25}
	derSubjectKeyID     = []byte{0x06, 0x03, 0x55, 0x1d, 0x0e}
	derAuthorityKeyID   = []byte{0x06, 0x03, 0x55, 0x1d, 0x23}
	// CA-only extensions, and those only a path validator would read: not on this leaf.
	refusedExtensions = map[string]bool{
		"\x06\x03\x55\x1d\x1e":                     true, // nameConstraints
		"\x06\x03\x55\x1d\x1f":                     true, // cRLDistributionPoints
		"\x06\x03\x55\x1d\x20":                     true, // certificatePolicies
		"\x06\x03\x55\x1d\x21":                     true, // policyMappings
		"\x06\x03\x55\x1d\x24":                     true, // policyConstraints
		"\x06\x03\x55\x1d\x36":                     true, // inhibitAnyPolicy
		"\x06\x08\x2b\x06\x01\x05\x05\x07\x01\x01": true, // authorityInfoAccess
	}
	utcTimePattern     = regexp.MustCompile(`\A[0-9]{12}Z\z`)
	generalTimePattern = regexp.MustCompile(`\A[0-9]{14}Z\z`)
	printablePattern   = regexp.MustCompile(`\A[A-Za-z0-9 '()+,\-./:=?]*\z`)
	dnsNamePattern     = regexp.MustCompile(`\A[\x21-\x7e]+\z`)
)

// derElement is one TLV: its tag, the whole encoding and its content.
type derElement struct {
	tag            byte
	whole, content []byte
}

// derElements splits data into its DER elements, accepting only minimal definite lengths.
func derElements(data []byte) ([]derElement, error) {
	var out []derElement
	for pos := 0; pos < len(data); {
		if len(data)-pos < 2 {
			return nil, certificateError("the certificate's DER is truncated")
		}
		start, length := pos+2, int(data[pos+1])
		if length >= 0x80 {
			count := length & 0x7f
			if count < 1 || count > 4 || start+count > len(data) || data[start] == 0 {
				return nil, certificateError("the certificate's DER length is malformed")
			}
			length = 0
			for _, b := range data[start : start+count] {
				length = length<<8 | int(b)
			}
			start += count
			if length < 0x80 {
				return nil, certificateError("the certificate's DER length is malformed")
			}
		}
		end := start + length
		if length < 0 || end > len(data) {
			return nil, certificateError("the certificate's DER is truncated")
		}
		out = append(out, derElement{tag: data[pos], whole: data[pos:end], content: data[start:end]})
		pos = end
	}
	return out, nil
}

// derWalk parses every element below, so a non-DER length or primitive anywhere is refused.
func derWalk(elements []derElement) error {
	for _, e := range elements {
		if e.tag&0x20 == 0 {
			if !isDERPrimitive(e.tag, e.content) {
				return certificateError("the certificate holds a malformed DER value (tag %#02x)", e.tag)
			}
			continue
		}
		inner, err := derElements(e.content)
		if err != nil {
			return err
		}
		if err := derWalk(inner); err != nil {
			return err
		}
	}
	return nil
}

// isDERPrimitive accepts BOOLEAN, INTEGER, BIT STRING and OBJECT IDENTIFIER in their one
// DER form (other primitives are not checked here).
func isDERPrimitive(tag byte, c []byte) bool {
	switch tag {
	case 0x01:
		return len(c) == 1 && (c[0] == 0x00 || c[0] == 0xff)
	case 0x02:
		redundant := len(c) > 1 && ((c[0] == 0 && c[1] < 0x80) || (c[0] == 0xff && c[1] >= 0x80))
		return len(c) > 0 && !redundant
	case 0x03:
		if len(c) == 0 {
			return false
		}
		if len(c) == 1 {
			return c[0] == 0
		}
		return c[0] <= 7 && c[len(c)-1]&(1<<c[0]-1) == 0
	case 0x06:
		if len(c) == 0 || c[len(c)-1] >= 0x80 {
			return false
		}
		for i, b := range c {
			if b == 0x80 && (i == 0 || c[i-1] < 0x80) {
				return false
			}
		}
	}
	return true
}

func tagsOf(elements []derElement) string {
	tags := make([]byte, len(elements))
	for i, e := range elements {
		tags[i] = e.tag
	}
	return string(tags)
}

func checkLeafShape(der []byte) error {
	whole, err := derElements(der)
	if err != nil {
		return err
	}
	if len(whole) != 1 || whole[0].tag != 0x30 {
		return certificateError("the certificate's DER is not one SEQUENCE")
	}
	if err := derWalk(whole); err != nil {
		return err
	}
	outer, err := derElements(whole[0].content)
	if err != nil {
		return err
	}
	if tagsOf(outer) != "\x30\x30\x03" {
		return certificateError("the certificate is not tbsCertificate, algorithm, signature")
	}
	tbs, err := derElements(outer[0].content)
	if err != nil {
		return err
	}
	if len(tbs) < 8 || !bytes.Equal(tbs[0].whole, derVersion3) {
		return certificateError("the certificate must be X.509 version 3")
	}
	serial := tbs[1]
	if serial.tag != 0x02 || len(serial.content) == 0 || serial.content[0] >= 0x80 || bytes.Equal(serial.content, []byte{0}) {
		return certificateError("the certificate's serial number is not positive")
	}
	if !bytes.Equal(tbs[2].whole, outer[1].whole) {
		return certificateError("the certificate names two different signature algorithms")
	}
	times, err := derElements(tbs[4].content)
	if err != nil || len(times) != 2 {
		return certificateError("the certificate's validity times are malformed")
	}
	for _, t := range times {
		if !isDERTime(t) {
			return certificateError("the certificate's validity times are malformed")
		}
	}
	for _, name := range []derElement{tbs[3], tbs[5]} {
		if err := checkNameShape(name); err != nil {
			return err
		}
	}
	if len(tbs[6].whole) != len(derP256SPKIPrefix)+64 || !bytes.HasPrefix(tbs[6].whole, derP256SPKIPrefix) {
		return certificateError("the certificate key must be an uncompressed ECDSA P-256 point")
	}
	switch tagsOf(tbs[7:]) {
	case "\xa3", "\x81\xa3", "\x82\xa3", "\x81\x82\xa3":
	default:
		return certificateError("the certificate has unexpected fields after its key")
	}
	wrapper, err := derElements(tbs[len(tbs)-1].content)
	if err != nil || len(wrapper) != 1 || wrapper[0].tag != 0x30 {
		return certificateError("the certificate's extensions are malformed")
	}
	extensions, err := derElements(wrapper[0].content)
	if err != nil {
		return err
	}
	for _, e := range extensions {
		if err := checkExtensionShape(e); err != nil {
			return err
		}
	}
	return nil
}

func checkExtensionShape(e derElement) error {
	fields, err := derElements(e.content)
	if err != nil {
		return err
	}
	if e.tag == 0x30 && len(fields) == 3 && bytes.Equal(fields[1].whole, derTrue) {
		fields = []derElement{fields[0], fields[2]}
	}
	if e.tag != 0x30 || tagsOf(fields) != "\x06\x04" {
		return certificateError("the certificate has a malformed extension")
	}
	value, err := derElements(fields[1].content)
	if err != nil || len(value) != 1 || derWalk(value) != nil {
		return certificateError("a certificate extension's value is not one DER element")
	}
	oid, v := string(fields[0].whole), value[0]
	if refusedExtensions[oid] {
		return certificateError("the certificate carries an extension a leaf may not have")
	}
	var inner []derElement
	if v.tag&0x20 != 0 {
		inner, _ = derElements(v.content)
	}
	shapeOK := true
	switch oid {
	case string(derKeyUsage):
		shapeOK = v.tag == 0x03 && len(v.content) >= 2
	case string(derExtendedKeyUsage):
		shapeOK = v.tag == 0x30 && len(inner) > 0 && strings.Trim(tagsOf(inner), "\x06") == ""
	case string(derSubjectKeyID):
		shapeOK = v.tag == 0x04
	case string(derAuthorityKeyID):
		t := tagsOf(inner)
		shapeOK = v.tag == 0x30 && (t == "\x80" || t == "\xa1\x82" || t == "\x80\xa1\x82")
	}
	if !shapeOK {
		return certificateError("a certificate extension's value has the wrong shape")
	}
	if bytes.Equal(fields[0].whole, derSAN) {
		if err := checkSANShape(value[0]); err != nil {
			return err
		}
	}
	if bytes.Equal(fields[0].whole, derBasicConstraints) && !bytes.Equal(fields[1].content, []byte{0x30, 0x00}) {
		return certificateError("the certificate's BasicConstraints is not exactly CA=false (a CA, a path length or a non-DER encoding)")
	}
	return nil
}

// isDERTime accepts UTCTime YYMMDDHHMMSSZ and GeneralizedTime YYYYMMDDHHMMSSZ naming a real
// instant (no month 13, no February 30, no hour 24).
func isDERTime(t derElement) bool {
	var year int
	var rest []byte
	switch {
	case t.tag == 0x17 && utcTimePattern.Match(t.content):
		year, _ = strconv.Atoi(string(t.content[:2]))
		if year >= 50 {
			year += 1900
		} else {
			year += 2000
		}
		rest = t.content[2:12]
	case t.tag == 0x18 && generalTimePattern.Match(t.content):
		year, _ = strconv.Atoi(string(t.content[:4]))
		rest = t.content[4:14]
	default:
		return false
	}
	var f [5]int
	for i := range f {
		f[i], _ = strconv.Atoi(string(rest[2*i : 2*i+2]))
	}
	month, day, hour, minute, second := f[0], f[1], f[2], f[3], f[4]
	if year < 1 || month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59 {
		return false
	}
	// Day 0 of the next month is the last day of this one.
	return day <= time.Date(year, time.Month(month)+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// checkNameShape accepts a Name of RDNs whose values are UTF8String, PrintableString or
// IA5String, each well formed.
func checkNameShape(name derElement) error {
	malformed := certificateError("the certificate's issuer or subject is malformed")
	rdns, err := derElements(name.content)
	if err != nil || name.tag != 0x30 {
		return malformed
	}
	for _, rdn := range rdns {
		attributes, err := derElements(rdn.content)
		if err != nil || rdn.tag != 0x31 || len(attributes) == 0 {
			return malformed
		}
		for _, a := range attributes {
			fields, err := derElements(a.content)
			if err != nil || a.tag != 0x30 || len(fields) != 2 || fields[0].tag != 0x06 || !isDERText(fields[1]) {
				return certificateError("the certificate's issuer or subject holds a malformed value")
			}
		}
	}
	return nil
}

func isDERText(v derElement) bool {
	switch v.tag {
	case 0x0c:
		return utf8.Valid(v.content)
	case 0x13:
		return printablePattern.Match(v.content)
	case 0x16:
		for _, b := range v.content {
			if b >= 0x80 {
				return false
			}
		}
		return true
	}
	return false
}

// checkSANShape accepts IP addresses (4 or 16 bytes) and visible-ASCII DNS names only.
func checkSANShape(value derElement) error {
	names, err := derElements(value.content)
	if err != nil || value.tag != 0x30 || len(names) == 0 {
		return certificateError("the certificate's subjectAltName is malformed")
	}
	for _, n := range names {
		ip := n.tag == 0x87 && (len(n.content) == 4 || len(n.content) == 16)
		if !ip && !(n.tag == 0x82 && dnsNamePattern.Match(n.content)) {
			return certificateError("the certificate's subjectAltName holds an unsupported name")
		}
	}
	return nil
}
