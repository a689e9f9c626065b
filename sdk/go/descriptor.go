package colossus

import (
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Discovery file names and caps.
const (
	endpointFile        = "endpoint.json"
	certificateFile     = "certificate.pem"
	maxDescriptorBytes  = 4 * 1024
	maxCertificateBytes = 16 * 1024
	apiVersion          = "v1alpha1"
	// maxPID bounds the pid member: a process ID is a signed 32-bit pid_t on every
	// platform a worker runs on, so anything larger cannot name a real process.
	maxPID = math.MaxInt32
)

var (
	pinPattern      = regexp.MustCompile(`\A[0-9a-f]{64}\z`)
	opaqueIDPattern = regexp.MustCompile(`\A[A-Za-z0-9_-]{1,64}\z`)
	endpointPattern = regexp.MustCompile(`\Ahttps://(127\.0\.0\.1|\[::1\]):([1-9][0-9]{0,4})\z`)
	descriptorKeys  = []string{"api_version", "certificate_sha256", "endpoint", "instance_id", "pid"}
)

func isPin(s string) bool      { return pinPattern.MatchString(s) }
func isOpaqueID(s string) bool { return opaqueIDPattern.MatchString(s) }

// Endpoint is a literal loopback TLS endpoint: 127.0.0.1 or ::1, and a port.
type Endpoint struct {
	// Host is "127.0.0.1" or "::1" (no brackets).
	Host string
	// Port is 1-65535.
	Port int
}

// String renders the endpoint as https://HOST:PORT.
func (e Endpoint) String() string { return "https://" + e.address() }

// address is the host:port form a dialer takes.
func (e Endpoint) address() string {
	if strings.Contains(e.Host, ":") {
		return "[" + e.Host + "]:" + strconv.Itoa(e.Port)
	}
	return e.Host + ":" + strconv.Itoa(e.Port)
}

// ParseEndpoint accepts exactly https://127.0.0.1:PORT or https://[::1]:PORT. Names
// (localhost included), other addresses, user info, paths, queries and fragments are
// refused with [ErrDescriptor].
func ParseEndpoint(value string) (Endpoint, error) {
	m := endpointPattern.FindStringSubmatch(value)
	if m == nil {
		return Endpoint{}, newError(ErrDescriptor, ReasonDescriptorInvalid,
			"endpoint must be https://127.0.0.1:PORT or https://[::1]:PORT with nothing else").withMeta("field", "endpoint")
	}
	port, err := strconv.Atoi(m[2])
	if err != nil || port < 1 || port > 65535 {
		return Endpoint{}, newError(ErrDescriptor, ReasonDescriptorInvalid, "endpoint port is out of range").withMeta("field", "endpoint")
	}
	host := "127.0.0.1"
	if m[1] == "[::1]" {
		host = "::1"
	}
	return Endpoint{Host: host, Port: port}, nil
}

// Descriptor is a validated endpoint.json.
type Descriptor struct {
	// Endpoint is where the worker listens: a loopback TLS address.
	Endpoint Endpoint
	// InstanceID is the instance the worker claims; it must equal the enrolled one.
	InstanceID string
	// PID is the worker's process ID, 1 to 2^31-1 (a readiness hint only).
	PID int64
	// APIVersion is the contract version the worker serves, "v1alpha1".
	APIVersion string
	// CertificateSHA256 is the pin the worker claims (64 lower-case hex); it must equal the
	// enrolled one.
	CertificateSHA256 string
}

func descriptorError(field, format string, args ...any) *Error {
	return newError(ErrDescriptor, ReasonDescriptorInvalid, format, args...).withMeta("field", field)
}

// ParseDescriptor validates the bytes of endpoint.json (C1): at most 4 KiB of UTF-8 JSON,
// one object with exactly its five members and no duplicates, each well formed.
func ParseDescriptor(raw []byte) (Descriptor, error) {
	if len(raw) > maxDescriptorBytes {
		return Descriptor{}, descriptorError("endpoint.json", "endpoint.json is larger than %d bytes", maxDescriptorBytes)
	}
	obj, err := decodeStrictObject(raw)
	if err != nil {
		return Descriptor{}, descriptorError("endpoint.json", "endpoint.json %v", err)
	}
	var unknown, missing []string
	for k := range obj {
		if !slices.Contains(descriptorKeys, k) {
			unknown = append(unknown, k)
		}
	}
	for _, k := range descriptorKeys {
		if _, ok := obj[k]; !ok {
			missing = append(missing, k)
		}
	}
	if len(unknown) > 0 || len(missing) > 0 {
		slices.Sort(unknown)
		return Descriptor{}, descriptorError("endpoint.json",
			"endpoint.json members are wrong (unknown: %q, missing: %q)", unknown, missing)
	}
	endpointText, ok := jsonString(obj["endpoint"])
	if !ok {
		return Descriptor{}, descriptorError("endpoint", "endpoint must be a string")
	}
	endpoint, err := ParseEndpoint(endpointText)
	if err != nil {
		return Descriptor{}, err
	}
	instanceID, ok := jsonString(obj["instance_id"])
	if !ok || !isOpaqueID(instanceID) {
		return Descriptor{}, descriptorError("instance_id", "instance_id must be 1-64 characters of [A-Za-z0-9_-]")
	}
	pid, ok := jsonPositiveInt(obj["pid"])
	if !ok || pid > maxPID {
		return Descriptor{}, descriptorError("pid", "pid must be an integer from 1 to %d", maxPID)
	}
	version, ok := jsonString(obj["api_version"])
	if !ok || version != apiVersion {
		return Descriptor{}, descriptorError("api_version", "api_version must be %q", apiVersion)
	}
	pin, ok := jsonString(obj["certificate_sha256"])
	if !ok || !isPin(pin) {
		return Descriptor{}, descriptorError("certificate_sha256", "certificate_sha256 must be 64 lower-case hex characters")
	}
	return Descriptor{Endpoint: endpoint, InstanceID: instanceID, PID: pid, APIVersion: version, CertificateSHA256: pin}, nil
}

// discovered is a descriptor and certificate that agree with each other and with the
// provisioned identity.
type discovered struct {
	descriptor  Descriptor
	certificate *leafCertificate
}

// discover reads and cross-checks the two discovery files against the expected identity.
// The expected values come only from the caller (C3): nothing read here can change them.
func discover(dir, expectedInstanceID, expectedPin string) (*discovered, error) {
	if err := checkPrivateDir(dir, ErrDescriptor, "the public API directory"); err != nil {
		return nil, err
	}
	raw, err := readOwnerOnlyFile(filepath.Join(dir, endpointFile), maxDescriptorBytes, ErrDescriptor)
	if err != nil {
		return nil, err
	}
	d, err := ParseDescriptor(raw)
	if err != nil {
		return nil, err
	}
	if d.CertificateSHA256 != expectedPin {
		return nil, newError(ErrPinMismatch, ReasonPinMismatch, "endpoint.json names a certificate other than the provisioned pin")
	}
	if d.InstanceID != expectedInstanceID {
		return nil, newError(ErrPinMismatch, ReasonInstanceMismatch, "endpoint.json names an instance other than the provisioned one")
	}
	pem, err := readOwnerOnlyFile(filepath.Join(dir, certificateFile), maxCertificateBytes, ErrCertificate)
	if err != nil {
		return nil, err
	}
	cert, err := parseLeafCertificate(pem, d.Endpoint.Host)
	if err != nil {
		return nil, err
	}
	if cert.sha256 != expectedPin {
		return nil, newError(ErrPinMismatch, ReasonPinMismatch, "certificate.pem does not hash to the provisioned pin")
	}
	return &discovered{descriptor: d, certificate: cert}, nil
}
