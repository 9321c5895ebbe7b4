//go:build wasip1

// Command guest is voltmcp's built-in plugin: one wasm module, built with
// GOOS=wasip1 GOARCH=wasm -buildmode=c-shared, that exports both classify
// and shape under plugin ABI version 1 (see wasm/abi.go). It avoids
// reflection-based encoding/json, which costs about thirty times as much a
// call inside wasm, in favour of the small scanner and writer in json.go.
package main

import "unsafe"

func main() {} // never called: a c-shared module is a reactor

// pinned keeps every buffer handed to the host alive until the host frees
// it. Go's wasm heap does not move objects, so a buffer's address is
// stable while it is reachable.
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
func classifyExport(ptr, size uint32) uint64 { return result(classify(input(ptr, size))) }

//go:wasmexport shape
func shapeExport(ptr, size uint32) uint64 { return result(shape(input(ptr, size))) }

// input returns the buffer the host filled, found by its address rather
// than by converting an integer to a pointer.
func input(ptr, size uint32) []byte {
	b := pinned[ptr]
	if uint32(len(b)) < size {
		return nil
	}
	return b[:size]
}

// result pins out and packs its address and length for the host.
func result(out []byte) uint64 {
	if len(out) == 0 {
		return 0
	}
	p := uint32(uintptr(unsafe.Pointer(&out[0])))
	pinned[p] = out
	return uint64(p)<<32 | uint64(len(out))
}
