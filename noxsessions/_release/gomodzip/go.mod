module github.com/obscuritylabs/colossus-sdks/noxsessions/_release/gomodzip

go 1.26.0

require golang.org/x/mod v0.41.0
