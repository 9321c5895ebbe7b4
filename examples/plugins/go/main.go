//go:build wasip1

// Command classifier is an example voltmcp risk classifier in Go, for
// plugin ABI version 1 (docs/plugins.md). Its house rule: a tool of the
// "payments" server that moves money (its name says charge, refund,
// payout or transfer) is destructive, and any other tool is unknown, which
// hands it to the next classifier in the chain.
//
// Build it with the standard Go toolchain (see ../README.md):
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath -buildvcs=false -o classifier.wasm .
//
// It uses encoding/json for clarity. That costs about 150 µs a call in
// wasm; the built-in module's hand-written scanner shows the fast way.
package main

import (
	"encoding/json"
	"strings"
	"unsafe"
)

func main() {} // a c-shared module is a reactor: main never runs

// input is the part of the ClassifyInput document this rule reads.
type input struct {
	Server string `json:"server"`
	Tool   string `json:"tool"`
}

// output is the Classification document.
type output struct {
	Risk   string `json:"risk"`
	Reason string `json:"reason"`
}

func decide(in input) output {
	if in.Server == "payments" {
		for _, verb := range []string{"charge", "refund", "payout", "transfer"} {
			if strings.Contains(strings.ToLower(in.Tool), verb) {
				return output{"destructive", "house rule: " + verb + " moves money"}
			}
		}
	}
	return output{"unknown", "no house rule matches"}
}

// pinned keeps the buffers the host holds alive until it frees them.
var pinned = map[uint32][]byte{}

//go:wasmexport voltmcp_abi_v1
func abiV1() {}

//go:wasmexport voltmcp_alloc
func alloc(size uint32) uint32 {
	buf := make([]byte, max(size, 1))
	p := uint32(uintptr(unsafe.Pointer(&buf[0])))
	pinned[p] = buf
	return p
}

//go:wasmexport voltmcp_free
func free(ptr, _ uint32) { delete(pinned, ptr) }

//go:wasmexport classify
func classify(ptr, size uint32) uint64 {
	var in input
	out := output{"unknown", "input is not a ClassifyInput"}
	if b := pinned[ptr]; uint32(len(b)) >= size && json.Unmarshal(b[:size], &in) == nil {
		out = decide(in)
	}
	res, _ := json.Marshal(out)
	p := uint32(uintptr(unsafe.Pointer(&res[0])))
	pinned[p] = res
	return uint64(p)<<32 | uint64(len(res))
}
