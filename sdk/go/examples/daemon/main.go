// Command daemon connects to an installed worker with the four independent inputs of a
// daemon connection and prints what the worker advertises.
//
//	daemon --public-api-dir ~/colossus --instance-id wkr_... --pin 8cf2...7e3c \
//	       [--keyring-service colossus --keyring-account my-app | --bearer-fd 3]
//
// The expected instance ID and pin come from enrolment (your own configuration), never
// from the discovery folder. Without a keyring (headless Linux, CI) pass the bearer on an
// inherited descriptor with --bearer-fd.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"strings"

	colossus "github.com/obscuritylabs/colossus-sdks/sdk/go"
)

func main() {
	dir := flag.String("public-api-dir", "", "the worker's --public-api-dir")
	instance := flag.String("instance-id", "", "instance ID printed at enrolment")
	pin := flag.String("pin", "", "certificate SHA-256 printed at enrolment")
	service := flag.String("keyring-service", "colossus", "OS keyring service")
	account := flag.String("keyring-account", "", "OS keyring account")
	bearerFD := flag.Int("bearer-fd", -1, "read the bearer from this inherited descriptor instead")
	flag.Parse()

	var credentials colossus.CredentialProvider = colossus.KeyringCredentialProvider{Service: *service, Account: *account}
	if *bearerFD >= 0 {
		raw, err := io.ReadAll(io.LimitReader(os.NewFile(uintptr(*bearerFD), "bearer"), 4096))
		if err != nil {
			log.Fatal("cannot read the bearer descriptor")
		}
		provider, err := colossus.NewInMemoryCredentialProvider(strings.TrimSpace(string(raw)))
		if err != nil {
			log.Fatal(err)
		}
		credentials = provider
	}
	client, err := colossus.Connect(context.Background(), colossus.DaemonOptions{
		PublicAPIDir:              *dir,
		ExpectedInstanceID:        *instance,
		ExpectedCertificateSHA256: *pin,
		Credentials:               credentials,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	info := client.ServerInfo()
	fmt.Printf("connected to %s (%s), capabilities %v\n", info.InstanceID, info.DeploymentMode, info.Capabilities)
}
