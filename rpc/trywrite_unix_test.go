//go:build unix

package rpc

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"path/filepath"
	"sync"
	"testing"
)

// TestSendWritesWholeLinesInOrder sends lines from several goroutines at
// once over a real unix socket, most of them larger than the socket's
// buffer, so that the direct write (tryWriter) leaves part of a line to
// the writer, while the client reads slowly: every line arrives whole,
// and each goroutine's lines in the order it sent them.
func TestSendWritesWholeLinesInOrder(t *testing.T) {
	dir := t.TempDir()
	ln, err := net.Listen("unix", filepath.Join(dir, "s"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	client, err := net.Dial("unix", filepath.Join(dir, "s"))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, ok := <-accepted
	if !ok {
		t.Fatal("accept failed")
	}
	defer server.Close()
	if tryWriter(server) == nil {
		t.Fatal("a unix socket has no direct write")
	}
	s := NewServer(nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := &connection{s: s, rw: server, ctx: ctx, cancel: cancel, out: make(chan []byte, 2), sem: make(chan struct{}, 2), idle: make(chan func()),
		kick: make(chan struct{}, 1), try: tryWriter(server)}
	go c.writeLoop()

	const senders, lines = 4, 12
	sizes := []int{10, 300 << 10, 100, 64 << 10, 1 << 20, 3}
	line := func(g, i int) []byte {
		head := fmt.Sprintf(`{"g":%d,"i":%d,"pad":"`, g, i)
		pad := bytes.Repeat([]byte{'a' + byte(g)}, sizes[(g+i)%len(sizes)])
		return append(append([]byte(head), pad...), "\"}\n"...)
	}
	var wg sync.WaitGroup
	for g := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range lines {
				if !c.send(line(g, i)) {
					t.Errorf("sender %d: line %d not sent", g, i)
					return
				}
			}
		}()
	}
	r := bufio.NewReaderSize(client, 4<<10)
	next := make([]int, senders)
	for range senders * lines {
		got, err := r.ReadBytes('\n')
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		var g, i int
		if _, err := fmt.Sscanf(string(got), `{"g":%d,"i":%d,`, &g, &i); err != nil || g < 0 || g >= senders {
			t.Fatalf("a line that is not one that was sent: %.80q", got)
		}
		if i != next[g] || !bytes.Equal(got, line(g, i)) {
			t.Fatalf("sender %d: got line %d (%d bytes), want line %d whole", g, i, len(got), next[g])
		}
		next[g]++
	}
	wg.Wait()
	if n := c.queued.Load(); n != 0 {
		t.Errorf("%d lines still counted as queued", n)
	}
}
