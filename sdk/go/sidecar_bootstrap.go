package colossus

import (
	"encoding/binary"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"unicode"
)

// Bootstrap framing (conformance/docs/sidecar.md): a 4-byte big-endian length, then that
// many bytes of UTF-8 JSON holding one object, in both directions.
const (
	maxBootstrapFrame = 65536
	bootstrapVersion  = 1
)

var replyKeys = []string{"api_version", "bearer", "certificate_pem", "certificate_sha256", "credential_id", "endpoint", "instance_id", "version"}

// bootstrapRequest is the one request the parent sends.
type bootstrapRequest struct {
	Version       int            `json:"version"`
	StateDir      string         `json:"state_dir"`
	ApplicationID string         `json:"application_id"`
	Grant         bootstrapGrant `json:"grant"`
}

type bootstrapGrant struct {
	Scopes []string `json:"scopes"`
	Roles  []string `json:"roles"`
	Tools  []string `json:"tools"`
}

func encodeFrame(v any) ([]byte, error) {
	body, err := json.Marshal(v)
	if err != nil || len(body) > maxBootstrapFrame {
		return nil, newError(ErrSidecar, ReasonBootstrapTooLarge, "the bootstrap request is larger than 64 KiB")
	}
	out := make([]byte, 4, 4+len(body))
	binary.BigEndian.PutUint32(out, uint32(len(body)))
	return append(out, body...), nil
}

// readFrame reads one frame, refusing a declared length over the cap before reading it.
func readFrame(r io.Reader) ([]byte, error) {
	var header [4]byte
	if _, err := io.ReadFull(r, header[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(header[:])
	if n > maxBootstrapFrame {
		return nil, newError(ErrSidecar, ReasonBootstrapMalformed, "the bootstrap reply is larger than 64 KiB")
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, err
	}
	return body, nil
}

// bootstrapReply is a validated reply. Its bearer is only behind a pointer.
type bootstrapReply struct {
	endpoint     Endpoint
	instanceID   string
	certificate  *leafCertificate
	credentialID string
	bearer       *secret
}

func bootstrapError(field, format string, args ...any) *Error {
	return newError(ErrSidecar, ReasonBootstrapMalformed, format, args...).withMeta("field", field)
}

// safeText keeps a worker-supplied token printable and short before it enters an error.
func safeText(s string, limit int) string {
	var b strings.Builder
	for i, r := range s {
		if i >= limit {
			break
		}
		if unicode.IsPrint(r) {
			b.WriteRune(r)
		} else {
			b.WriteByte('?')
		}
	}
	return b.String()
}

// parseBootstrapReply validates every member of a reply before anything is used.
func parseBootstrapReply(body []byte) (*bootstrapReply, error) {
	obj, err := decodeStrictObject(body)
	if err != nil {
		return nil, bootstrapError("reply", "the bootstrap reply %v", err)
	}
	if v, ok := jsonPositiveInt(obj["version"]); !ok || v != bootstrapVersion {
		return nil, bootstrapError("version", "the bootstrap reply has an unknown version")
	}
	if raw, ok := obj["error"]; ok {
		var failure struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		}
		if len(obj) != 2 || json.Unmarshal(raw, &failure) != nil {
			return nil, bootstrapError("error", "the bootstrap error reply is malformed")
		}
		code := safeText(failure.Code, 64)
		if code == "" {
			code = "unknown"
		}
		e := newError(ErrSidecar, ReasonBootstrapRefused, "the sidecar refused to start: %s", safeText(failure.Message, 512))
		return nil, e.withMeta("code", code)
	}
	var keys []string
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if !slices.Equal(keys, replyKeys) {
		return nil, bootstrapError("reply", "the bootstrap reply members are wrong: %q", keys)
	}
	text := func(name string) string { s, _ := jsonString(obj[name]); return s }
	endpointText, ok := jsonString(obj["endpoint"])
	if !ok {
		return nil, bootstrapError("endpoint", "the bootstrap endpoint must be a string")
	}
	endpoint, err := ParseEndpoint(endpointText)
	if err != nil {
		return nil, bootstrapError("endpoint", "the bootstrap endpoint must be https://127.0.0.1:PORT or https://[::1]:PORT")
	}
	if !isOpaqueID(text("instance_id")) {
		return nil, bootstrapError("instance_id", "the bootstrap instance_id is malformed")
	}
	if !isOpaqueID(text("credential_id")) {
		return nil, bootstrapError("credential_id", "the bootstrap credential_id is malformed")
	}
	if text("api_version") != apiVersion {
		return nil, bootstrapError("api_version", "the bootstrap api_version is not %s", apiVersion)
	}
	pin := text("certificate_sha256")
	if !isPin(pin) {
		return nil, bootstrapError("certificate_sha256", "the bootstrap certificate_sha256 is malformed")
	}
	// The cap of the daemon's certificate.pem holds for the reply's copy too.
	pem, ok := jsonString(obj["certificate_pem"])
	if !ok || len(pem) > maxCertificateBytes {
		return nil, bootstrapError("certificate_pem", "the bootstrap certificate_pem is malformed")
	}
	cert, err := parseLeafCertificate([]byte(pem), endpoint.Host)
	if err != nil {
		e, _ := asError(err)
		return nil, bootstrapError("certificate_pem", "the bootstrap certificate is unusable: %s", e.Message)
	}
	if cert.sha256 != pin {
		return nil, newError(ErrPinMismatch, ReasonPinMismatch, "the bootstrap certificate does not hash to its pin")
	}
	bearerText, ok := jsonString(obj["bearer"])
	bearer, err := newSecret(bearerText)
	if !ok || err != nil {
		return nil, bootstrapError("bearer", "the bootstrap bearer is malformed")
	}
	return &bootstrapReply{endpoint: endpoint, instanceID: text("instance_id"), certificate: cert,
		credentialID: text("credential_id"), bearer: bearer}, nil
}
