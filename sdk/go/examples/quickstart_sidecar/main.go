// Command quickstart_sidecar starts a private worker, runs one prompt and prints its
// output as it streams. The worker program comes from $COLOSSUS_REFERENCE_WORKER (default:
// colossus-reference-worker on PATH).
package main

import (
	"context"
	"fmt"
	"log"
	"os"

	colossus "github.com/obscuritylabs/colossus-sdks/sdk/go"
)

func main() {
	ctx := context.Background()
	client, err := colossus.StartSidecar(ctx, colossus.SidecarOptions{
		Executable:    workerProgram(),
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
		switch p := event.Payload.(type) {
		case *colossus.OutputDelta:
			fmt.Print(p.Text)
		case *colossus.RunTerminated:
			fmt.Printf("\nrun %s\n", p.Status)
		}
	}
}

func workerProgram() string {
	if p := os.Getenv("COLOSSUS_REFERENCE_WORKER"); p != "" {
		return p
	}
	return "colossus-reference-worker"
}
