package colossus

import (
	"context"
	"errors"
	"fmt"

	"github.com/zalando/go-keyring"
)

// CredentialProvider supplies the bearer. The SDK asks only after every trust check of
// a connection has passed (C5), and keeps the answer in memory only.
type CredentialProvider interface {
	// Bearer returns the application's bearer.
	Bearer(ctx context.Context) (string, error)
}

// InMemoryCredentialProvider holds a bearer in process memory, for tests and for
// programs that received it through a pipe. Printing it never shows the bearer.
type InMemoryCredentialProvider struct{ s *secret }

// NewInMemoryCredentialProvider validates bearer and keeps it in memory.
func NewInMemoryCredentialProvider(bearer string) (*InMemoryCredentialProvider, error) {
	s, err := newSecret(bearer)
	if err != nil {
		return nil, err
	}
	return &InMemoryCredentialProvider{s: s}, nil
}

// Bearer returns the held bearer.
func (p *InMemoryCredentialProvider) Bearer(context.Context) (string, error) {
	if p == nil || p.s == nil {
		return "", newError(ErrCredential, ReasonBearerMalformed, "the in-memory provider holds no bearer")
	}
	return p.s.value(), nil
}

// String never reveals the bearer.
func (p *InMemoryCredentialProvider) String() string {
	return "InMemoryCredentialProvider(" + redacted + ")"
}

// GoString never reveals the bearer.
func (p *InMemoryCredentialProvider) GoString() string { return p.String() }

// Format never reveals the bearer, whatever the verb.
func (p *InMemoryCredentialProvider) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(p.String())) }

// KeyringCredentialProvider reads the bearer from the OS credential store (Secret Service
// on Linux, Keychain on macOS, Credential Manager on Windows) under a service and account,
// as written by the worker's enrolment (--keyring-service, --keyring-account).
type KeyringCredentialProvider struct {
	// Service is the keyring service name.
	Service string
	// Account is the keyring account (user) name.
	Account string
}

// Bearer reads and validates the stored bearer.
func (p KeyringCredentialProvider) Bearer(context.Context) (string, error) {
	if p.Service == "" || p.Account == "" {
		field := "service"
		if p.Service != "" {
			field = "account"
		}
		return "", newError(ErrCredential, ReasonFieldInvalid, "the keyring provider needs a service and an account").withMeta("field", field)
	}
	value, err := keyring.Get(p.Service, p.Account)
	if errors.Is(err, keyring.ErrNotFound) {
		return "", &Error{kind: ErrCredential.(*kind), Reason: ReasonKeyringEntryMissing,
			Message: fmt.Sprintf("no bearer is stored in the OS keyring for service %q, account %q", p.Service, p.Account)}
	}
	if err != nil {
		// Headless Linux and CI machines usually have no Secret Service to ask.
		return "", &Error{kind: ErrCredential.(*kind), Reason: ReasonKeyringUnavailable, cause: err,
			Message: "no OS keyring is available on this machine; enrol with --bearer-fd and " +
				"pass the bearer through an InMemoryCredentialProvider or your own CredentialProvider"}
	}
	if _, err := newSecret(value); err != nil {
		return "", err
	}
	return value, nil
}

// loadSecret asks a provider and validates its answer.
func loadSecret(ctx context.Context, p CredentialProvider) (*secret, error) {
	if p == nil {
		return nil, newError(ErrCredential, ReasonProviderFailed, "no credential provider was given")
	}
	value, err := p.Bearer(ctx)
	if err != nil {
		return nil, providerFailure(err)
	}
	return newSecret(value)
}

// providerFailure is what the SDK reports for a provider's error, by one rule in every
// SDK (docs/requirements.md, C8): the SDK's own credential error, with its catalogue
// reason, as it stands (only this SDK's providers make one: the kind is unexported);
// anything else, a foreign error or one that merely wraps an SDK error under text of its
// own, becomes PROVIDER_FAILED, with the provider's error kept only as the cause
// (Unwrap), which Error() never prints: its text may quote the secret.
func providerFailure(err error) *Error {
	if e, ok := err.(*Error); ok && e.kind != nil && e.kind.isA(ErrCredential.(*kind)) {
		return e
	}
	return &Error{kind: ErrCredential.(*kind), Reason: ReasonProviderFailed,
		Message: "the credential provider failed", cause: err}
}
