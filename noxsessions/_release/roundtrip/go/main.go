// Command roundtrip is the release round trip for the Go module zip: connect, create, watch
// to the end. It is built in a fresh module that resolves the SDK from the release's module
// proxy folder, against a reference worker that `dev` started:
//
//	go run . PUBLIC_API_DIR INSTANCE_ID CERT_SHA256 BEARER_FILE
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"runtime/debug"
	"strings"

	colossus "github.com/obscuritylabs/colossus-sdks/sdk/go"
)

func main() {
	if len(os.Args) != 5 {
		log.Fatal("usage: roundtrip PUBLIC_API_DIR INSTANCE_ID CERT_SHA256 BEARER_FILE")
	}
	if err := run(context.Background(), os.Args[1], os.Args[2], os.Args[3], os.Args[4]); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, dir, instanceID, pin, bearerFile string) error {
	if build, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range build.Deps {
			if dep.Path == "github.com/obscuritylabs/colossus-sdks/sdk/go" {
				fmt.Printf("go: %s %s (%s)\n", dep.Path, dep.Version, dep.Sum)
			}
		}
	}
	bearer, err := os.ReadFile(bearerFile)
	if err != nil {
		return err
	}
	credentials, err := colossus.NewInMemoryCredentialProvider(strings.TrimSpace(string(bearer)))
	if err != nil {
		return err
	}
	client, err := colossus.Connect(ctx, colossus.DaemonOptions{
		PublicAPIDir:              dir,
		ExpectedInstanceID:        instanceID,
		ExpectedCertificateSHA256: pin,
		Credentials:               credentials,
	})
	if err != nil {
		return err
	}
	defer client.Close()
	info := client.ServerInfo()
	fmt.Printf("go: connected to %s (%s) over TLS 1.3\n", info.InstanceID, info.DeploymentMode)
	created, err := client.Runs.Create(ctx, colossus.Text("colossus-script v1\nsay round trip from the go module zip\n"))
	if err != nil {
		return err
	}
	fmt.Printf("go: created %s\n", created.Run.RunID)
	for event, err := range client.Runs.Watch(ctx, created.Run.RunID) {
		if err != nil {
			return err
		}
		switch p := event.Payload.(type) {
		case *colossus.OutputDelta:
			fmt.Printf("go: event %d output %q\n", event.Sequence, p.Text)
		case *colossus.RunTerminated:
			fmt.Printf("go: event %d terminated %s\n", event.Sequence, p.Status)
		default:
			fmt.Printf("go: event %d %T\n", event.Sequence, p)
		}
	}
	return nil
}
