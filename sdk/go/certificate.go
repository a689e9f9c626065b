package colossus

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"net/netip"
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
	return newError(ErrCertificate, ReasonCertificateInvalid, format, args...).withMeta("field", "certificate")
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
		// netip keeps ::ffff:127.0.0.1 apart from 127.0.0.1; net.IP.Equal would let one stand
		// for the other.
		want, err := netip.ParseAddr(host)
		found := false
		for _, ip := range cert.IPAddresses {
			if got, ok := netip.AddrFromSlice(ip); ok && err == nil && got == want {
				found = true
			}
		}
		if !found {
			return nil, certificateError("the certificate has no IP SAN for the endpoint address")
		}
	}
	return &leafCertificate{der: der, sha256: sha256Hex(der), cert: cert}, nil
}
