package colossus_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	colossus "github.com/obscuritylabs/colossus-sdks/sdk/go"
)

func ExampleParseEndpoint() {
	endpoint, err := colossus.ParseEndpoint("https://[::1]:50051")
	fmt.Println(endpoint.Host, endpoint.Port, err)

	_, err = colossus.ParseEndpoint("https://localhost:50051")
	fmt.Println(errors.Is(err, colossus.ErrDescriptor), errors.Is(err, colossus.ErrTrust))
	// Output:
	// ::1 50051 <nil>
	// true true
}

func ExampleError() {
	// Every refusal is an *Error: branch with errors.Is on the sentinels, read the
	// fields after errors.As, never parse the message.
	_, err := colossus.ParseDescriptor([]byte(`{"endpoint": "https://127.0.0.1:1", "endpoint": "x"}`))
	var e *colossus.Error
	if errors.As(err, &e) {
		fmt.Println(errors.Is(err, colossus.ErrTrust), e.Reason, e.Metadata["field"])
	}
	// Output:
	// true DESCRIPTOR_INVALID endpoint.json
}

func ExampleNewInMemoryCredentialProvider() {
	provider, err := colossus.NewInMemoryCredentialProvider("cb1_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
	if err != nil {
		log.Fatal(err)
	}
	// Printing a provider never shows the bearer.
	fmt.Printf("%v %+v\n", provider, provider)

	_, err = colossus.NewInMemoryCredentialProvider("too short")
	fmt.Println(errors.Is(err, colossus.ErrCredential))
	// Output:
	// InMemoryCredentialProvider(<redacted>) InMemoryCredentialProvider(<redacted>)
	// true
}

func ExampleStartSidecar() {
	ctx := context.Background()
	client, err := colossus.StartSidecar(ctx, colossus.SidecarOptions{
		Executable:    "colossus-reference-worker",
		ApplicationID: "quickstart",
		Scopes:        []string{"runs:execute", "runs:read"},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	created, err := client.Runs.Create(ctx, colossus.Text("Say hello"))
	if err != nil {
		log.Fatal(err)
	}
	for event, err := range client.Runs.Watch(ctx, created.Run.RunID) {
		if err != nil {
			log.Fatal(err)
		}
		if delta, ok := event.Payload.(*colossus.OutputDelta); ok {
			fmt.Print(delta.Text)
		}
	}
}

func ExampleConnect() {
	client, err := colossus.Connect(context.Background(), colossus.DaemonOptions{
		PublicAPIDir:              "/home/me/colossus",
		ExpectedInstanceID:        "wkr_example",                                                      // printed at enrolment
		ExpectedCertificateSHA256: "8cf2a0c4d6e8f0a2b4c6d8e0f2a4b6c8d0e2f4a6b8c0d2e4f6a8b0c2d4e67e3c", // printed at enrolment
		Credentials:               colossus.KeyringCredentialProvider{Service: "colossus", Account: "my-app"},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	fmt.Println(client.ServerInfo().Capabilities)
}

func ExampleRuns_Watch() {
	ctx := context.Background()
	var client *colossus.Client // from Connect or StartSidecar
	var progress colossus.WatchProgress
	for event, err := range client.Runs.Watch(ctx, "run_123", colossus.WithProgress(&progress), colossus.WithIdleTimeout(time.Minute)) {
		var gap *colossus.WatchGapError
		switch {
		case errors.As(err, &gap):
			log.Fatalf("the worker skipped from %d to %d", gap.Expected-1, gap.Received)
		case err != nil:
			// Resume later, in this or another process, after the stored cursor.
			log.Printf("watch stopped at %d: %v", progress.LastSequence(), err)
			return
		}
		switch p := event.Payload.(type) {
		case *colossus.OutputDelta:
			fmt.Print(p.Text)
		case *colossus.InteractionRequested:
			fmt.Println("question:", p.Interaction.Prompt.Question)
		}
	}
}

func ExampleRuns_Create() {
	ctx := context.Background()
	var client *colossus.Client // from Connect or StartSidecar
	created, err := client.Runs.Create(ctx, colossus.Text("Summarise the report"),
		colossus.WithMode(colossus.RunModeExecute), colossus.WithMaxTurns(10))
	var e *colossus.Error
	if errors.Is(err, colossus.ErrOutcomeUnknown) && errors.As(err, &e) {
		// The SDK does not know whether the run exists: ask again with the same key.
		created, err = client.Runs.Create(ctx, colossus.Text("Summarise the report"),
			colossus.WithMode(colossus.RunModeExecute), colossus.WithMaxTurns(10),
			colossus.WithIdempotencyKey(e.IdempotencyKey))
	}
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(created.Run.RunID, created.Replayed)
}

func ExampleRuns_List() {
	ctx := context.Background()
	var client *colossus.Client // from Connect or StartSidecar
	for run, err := range client.Runs.List(ctx, colossus.WithStatuses(colossus.RunStatusRunning, colossus.RunStatusQueued)) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(run.RunID, run.Status)
	}
}
