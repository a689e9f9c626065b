package colossus

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// C7 holds for every call: a worker may advertise a request cap smaller than a read, a
// watch, a listing, a cancel or a download request, and each must be refused locally
// instead of being sent and left to the worker.
func TestEveryCallIsHeldToTheAdvertisedRequestCap(t *testing.T) {
	longID := "run_" + strings.Repeat("a", 60) // 66 bytes once encoded, over the cap of 48
	calls := map[string]func(c *Client) error{
		"GetRun": func(c *Client) error {
			_, err := c.Runs.Get(context.Background(), longID)
			return err
		},
		"CancelRun": func(c *Client) error {
			_, err := c.Runs.Cancel(context.Background(), longID)
			return err
		},
		"ListRuns": func(c *Client) error {
			_, err := c.Runs.ListPage(context.Background(), WithPageToken(strings.Repeat("t", 60)))
			return err
		},
		"WatchRun": func(c *Client) error {
			for _, err := range c.Runs.Watch(context.Background(), longID) {
				return err
			}
			return nil
		},
		"DownloadArtifact": func(c *Client) error {
			_, err := c.Artifacts.Download(context.Background(), "art_"+strings.Repeat("a", 60))
			return err
		},
		// The manifest alone (a 64-digit SHA-256) is over the cap; the chunks would fit.
		"UploadArtifact": func(c *Client) error {
			_, err := c.Artifacts.Upload(context.Background(), []byte("0123456789"), "text/plain")
			return err
		},
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			cert := newCert(t, false)
			w := startFakeWorker(t, cert, genuineTLS(cert), "")
			w.info.Limits.MaxRequestBytes = 48
			w.info.Capabilities = []string{CapabilityArtifacts}
			c := connectFake(t, w)
			sent := w.requests.Load()
			err := call(c)
			var e *Error
			if !errors.Is(err, ErrResourceExhausted) || !errors.As(err, &e) || e.Reason != ReasonRequestTooLarge {
				t.Fatalf("%s over the cap: got %v, want a local REQUEST_TOO_LARGE refusal", name, err)
			}
			if got := w.requests.Load(); got != sent {
				t.Fatalf("%s over the cap reached the worker (%d requests after connect, want %d)", name, got, sent)
			}
		})
	}
}

// A read that fits the lowered cap is still sent.
func TestAReadWithinTheAdvertisedRequestCapIsSent(t *testing.T) {
	cert := newCert(t, false)
	w := startFakeWorker(t, cert, genuineTLS(cert), "")
	w.info.Limits.MaxRequestBytes = 48
	c := connectFake(t, w)
	sent := w.requests.Load()
	if _, err := c.Runs.Get(context.Background(), "run_short"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a short GetRun: got %v, want the fake worker's NOT_FOUND", err)
	}
	if got := w.requests.Load(); got != sent+1 {
		t.Fatalf("a short GetRun was not sent (%d requests, want %d)", got, sent+1)
	}
}
