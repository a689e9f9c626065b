package colossus

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

type failingProvider struct{ err error }

func (p failingProvider) Bearer(context.Context) (string, error) { return "", p.err }

// One rule in every SDK (docs/requirements.md, C8): a provider's own error becomes the
// SDK's credential error with its catalogue reason; the provider's error is kept only as
// the cause, and its text is never in the SDK's message or Error().
func TestAProvidersOwnErrorIsKeptOnlyAsTheCause(t *testing.T) {
	const secretText = "vault said cb1_SECRETSECRETSECRETSECRETSECRETSECRETSECRET1"
	foreign := errors.New(secretText)
	sdkErr := newError(ErrTransport, ReasonUnavailable, "some other call failed")
	for name, providerErr := range map[string]error{
		"foreign":                        foreign,
		"foreign wrapping an SDK error":  fmt.Errorf("%s: %w", secretText, newError(ErrCredential, ReasonKeyringEntryMissing, "missing")),
		"an SDK error of another kind":   sdkErr,
		"a wrapped SDK credential error": fmt.Errorf("wrapped: %w", newError(ErrCredential, ReasonBearerMalformed, "bad")),
	} {
		_, err := loadSecret(context.Background(), failingProvider{providerErr})
		var e *Error
		if !errors.As(err, &e) || !errors.Is(err, ErrCredential) || e.Reason != ReasonProviderFailed || e.Code.String() != "OK" {
			t.Fatalf("%s: %v, want a credential error PROVIDER_FAILED", name, err)
		}
		if errors.Unwrap(err) != providerErr {
			t.Fatalf("%s: the cause is %v, want the provider's error", name, errors.Unwrap(err))
		}
		for _, shown := range []string{err.Error(), e.Message, fmt.Sprintf("%v %+v %s", err, err, err)} {
			if strings.Contains(shown, "vault said") || strings.Contains(shown, "wrapped") || strings.Contains(shown, "some other call") {
				t.Fatalf("%s: the provider's text is shown: %q", name, shown)
			}
		}
	}
	// The SDK's own providers' credential errors keep their catalogue reason.
	own := newError(ErrCredential, ReasonKeyringEntryMissing, "no bearer is stored")
	if _, err := loadSecret(context.Background(), failingProvider{own}); err != own {
		t.Fatalf("the SDK's own credential error became %v", err)
	}
}
