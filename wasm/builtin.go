package wasm

import _ "embed"

// The built-in module is built from builtin/guest with the Go toolchain and
// committed; TestBuiltinReproducible fails when the committed bytes are not
// what the source builds to.
//
//go:generate env GOOS=wasip1 GOARCH=wasm CGO_ENABLED=0 go build -buildmode=c-shared -trimpath -buildvcs=false -ldflags=-buildid= -o builtin/builtin.wasm ./builtin/guest

// builtinWasm is the built-in classifier and shaper.
//
//go:embed builtin/builtin.wasm
var builtinWasm []byte
