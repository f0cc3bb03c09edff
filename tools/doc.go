// Package tools pins the code generators of the repository as Go tool
// directives (go.mod): protoc-gen-go, protoc-gen-go-grpc and wire. Run them
// with `go tool wire` or find their binaries with `go tool -n protoc-gen-go`
// from anywhere in the workspace; `make generate` does both. The package
// itself is empty; it exists so that `go vet ./...` and `go test ./...`
// have something to match in this module.
package tools
