package main

import (
	"os"
	"runtime"
	"testing"
)

func TestZZProf(t *testing.T) {
	runtime.MemProfileRate = 4096
	r := runCLI(t, fakeEnv(t, nil), "vet", os.Getenv("ZZFILE"))
	t.Log(len(r.stdout), len(r.stderr), r.code)
}
