module github.com/obscuritylabs/colossus-sdks/conformance/clients/go

go 1.26.0

require (
	github.com/obscuritylabs/colossus-sdks/sdk/go v0.0.0
	google.golang.org/grpc v1.85.0
)

require (
	github.com/danieljoos/wincred v1.2.3 // indirect
	github.com/godbus/dbus/v5 v5.2.2 // indirect
	github.com/zalando/go-keyring v0.2.8 // indirect
	golang.org/x/net v0.60.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	golang.org/x/text v0.42.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260817212433-ac3dfec99bb1 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)

// Always the SDK in this repository, never a published version.
replace github.com/obscuritylabs/colossus-sdks/sdk/go => ../../../sdk/go
