// Command errors shows how to branch on SDK errors with errors.Is and errors.As, and the
// safe retry of a create whose outcome is unknown.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"

	colossus "github.com/obscuritylabs/colossus-sdks/sdk/go"
)

// createOnce creates a run, retrying only through the idempotency key after an unknown
// outcome, so the run exists at most once however often the connection breaks.
func createOnce(ctx context.Context, client *colossus.Client, input []colossus.InputPart) (*colossus.CreateRunResult, error) {
	var opts []colossus.CallOption
	for attempt := 0; attempt < 3; attempt++ {
		created, err := client.Runs.Create(ctx, input, opts...)
		var e *colossus.Error
		if errors.Is(err, colossus.ErrOutcomeUnknown) && errors.As(err, &e) {
			opts = []colossus.CallOption{colossus.WithIdempotencyKey(e.IdempotencyKey)}
			continue
		}
		return created, err
	}
	return nil, errors.New("gave up after three unknown outcomes")
}

func main() {
	ctx := context.Background()
	exe := os.Getenv("COLOSSUS_REFERENCE_WORKER")
	if exe == "" {
		exe = "colossus-reference-worker"
	}
	// A grant without runs:control: cancelling will be refused.
	client, err := colossus.StartSidecar(ctx, colossus.SidecarOptions{
		Executable: exe, ApplicationID: "errors-example", Scopes: []string{"runs:execute", "runs:read"},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	created, err := createOnce(ctx, client, colossus.Text("hello"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("created with key", created.IdempotencyKey != "")

	_, err = client.Runs.Cancel(ctx, created.Run.RunID)
	var e *colossus.Error
	switch {
	case errors.Is(err, colossus.ErrPermissionDenied) && errors.As(err, &e):
		fmt.Println("permission denied, scope", e.Metadata["scope"])
	case err != nil:
		log.Fatal(err)
	}

	_, err = client.Runs.Get(ctx, "run_does_not_exist")
	fmt.Println("not found:", errors.Is(err, colossus.ErrNotFound))

	_, err = client.Artifacts.Upload(ctx, []byte("x"), "text/plain")
	fmt.Println("capability missing or refused:", errors.Is(err, colossus.ErrCapabilityMissing) || errors.Is(err, colossus.ErrPermissionDenied))
}
