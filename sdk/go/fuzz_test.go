package colossus

import (
	"errors"
	"testing"
)

// Fuzz targets for the parsers that read untrusted bytes. Seeds are the shared vectors;
// the invariants: never panic, refuse only with an *Error of the SDK, and accept only
// values that satisfy the rules the parser promises.

func seed(f *testing.F, file string, pick func(vector) string) {
	for _, v := range loadVectors(f, file).Vectors {
		f.Add(pick(v))
	}
}

func checkRefusal(t *testing.T, err error) {
	var e *Error
	if !errors.As(err, &e) || !errors.Is(err, ErrColossus) || e.Message == "" {
		t.Fatalf("refusal is not a described SDK error: %#v", err)
	}
}

func FuzzParseDescriptor(f *testing.F) {
	seed(f, "descriptors.json", func(v vector) string { return v.Text })
	f.Fuzz(func(t *testing.T, text string) {
		d, err := ParseDescriptor([]byte(text))
		if err != nil {
			checkRefusal(t, err)
			return
		}
		if len(text) > maxDescriptorBytes || !isPin(d.CertificateSHA256) || !isOpaqueID(d.InstanceID) || d.PID <= 0 ||
			(d.Endpoint.Host != "127.0.0.1" && d.Endpoint.Host != "::1") || d.Endpoint.Port < 1 || d.Endpoint.Port > 65535 {
			t.Fatalf("accepted an invalid descriptor: %+v", d)
		}
	})
}

func FuzzParseEndpoint(f *testing.F) {
	seed(f, "endpoints.json", func(v vector) string { return v.Endpoint })
	f.Fuzz(func(t *testing.T, text string) {
		e, err := ParseEndpoint(text)
		if err != nil {
			checkRefusal(t, err)
			return
		}
		if e.String() != text {
			t.Fatalf("accepted %q but it renders as %q", text, e.String())
		}
	})
}

func FuzzParseCertificate(f *testing.F) {
	seed(f, "certificates.json", func(v vector) string { return v.PEM })
	f.Fuzz(func(t *testing.T, pem string) {
		c, err := parseLeafCertificate([]byte(pem), "127.0.0.1")
		if err != nil {
			checkRefusal(t, err)
			return
		}
		if c.cert.IsCA || sha256Hex(c.der) != c.sha256 {
			t.Fatal("accepted an invalid leaf")
		}
	})
}

func FuzzParseBootstrapReply(f *testing.F) {
	seed(f, "bootstrap-replies.json", func(v vector) string { return v.Text })
	f.Fuzz(func(t *testing.T, text string) {
		r, err := parseBootstrapReply([]byte(text))
		if err != nil {
			checkRefusal(t, err)
			if !errors.Is(err, ErrSidecar) && !errors.Is(err, ErrPinMismatch) {
				t.Fatalf("a bootstrap refusal must be a sidecar or pin error: %v", err)
			}
			return
		}
		if r.certificate.sha256 == "" || !validBearer(r.bearer.value()) {
			t.Fatal("accepted an invalid reply")
		}
	})
}
