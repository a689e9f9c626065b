package colossus

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"net"
	"regexp"
)

// pemPattern accepts exactly one PEM CERTIFICATE block and nothing else.
var pemPattern = regexp.MustCompile(`\A-----BEGIN CERTIFICATE-----\r?\n((?:[A-Za-z0-9+/=]{1,76}\r?\n)+)-----END CERTIFICATE-----(?:\r?\n)?\z`)

var whitespace = regexp.MustCompile(`[\r\n]`)

// leafCertificate is a validated end-entity certificate and its pin.
type leafCertificate struct {
	der    []byte
	sha256 string
	cert   *x509.Certificate
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func certificateError(format string, args ...any) *Error {
	return newError(ErrCertificate, ReasonFieldInvalid, format, args...).withMeta("field", "certificate")
}

// parseLeafCertificate validates one PEM leaf (C2): a single block, no key, no bundle, no
// trailing text; CA=false; ECDSA P-256; with host set, an IP SAN for that address.
func parseLeafCertificate(pem []byte, host string) (*leafCertificate, error) {
	m := pemPattern.FindSubmatch(pem)
	if m == nil {
		return nil, certificateError("the certificate must be exactly one PEM CERTIFICATE block with nothing else")
	}
	der, err := base64.StdEncoding.Strict().DecodeString(whitespace.ReplaceAllString(string(m[1]), ""))
	if err != nil {
		return nil, certificateError("the certificate's base64 body is malformed")
	}
	return validateLeafDER(der, host)
}

func validateLeafDER(der []byte, host string) (*leafCertificate, error) {
	if err := checkLeafShape(der); err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, certificateError("the certificate is not valid DER X.509")
	}
	if !cert.BasicConstraintsValid {
		return nil, certificateError("the certificate has no BasicConstraints extension")
	}
	if cert.IsCA {
		return nil, certificateError("the certificate is a CA certificate; a leaf is required")
	}
	key, ok := cert.PublicKey.(*ecdsa.PublicKey)
	if !ok || key.Curve != elliptic.P256() {
		return nil, certificateError("the certificate key must be ECDSA P-256")
	}
	if host != "" {
		// Byte for byte: net.IP.Equal would let ::ffff:127.0.0.1 stand for 127.0.0.1.
		want := net.ParseIP(host)
		if v4 := want.To4(); v4 != nil {
			want = v4
		}
		found := false
		for _, ip := range cert.IPAddresses {
			if bytes.Equal(ip, want) {
				found = true
			}
		}
		if !found {
			return nil, certificateError("the certificate has no IP SAN for the endpoint address")
		}
	}
	return &leafCertificate{der: der, sha256: sha256Hex(der), cert: cert}, nil
}

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
	utcTimePattern      = regexp.MustCompile(`\A[0-9]{12}Z\z`)
	generalTimePattern  = regexp.MustCompile(`\A[0-9]{14}Z\z`)
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

// derWalk parses every constructed element below, so a non-DER length anywhere is refused.
func derWalk(elements []derElement) error {
	for _, e := range elements {
		if e.tag&0x20 == 0 {
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
		if !(t.tag == 0x17 && utcTimePattern.Match(t.content)) && !(t.tag == 0x18 && generalTimePattern.Match(t.content)) {
			return certificateError("the certificate's validity times are malformed")
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
	if bytes.Equal(fields[0].whole, derBasicConstraints) && !bytes.Equal(fields[1].content, []byte{0x30, 0x00}) {
		return certificateError("the certificate's BasicConstraints is not exactly CA=false (a CA, a path length or a non-DER encoding)")
	}
	return nil
}
