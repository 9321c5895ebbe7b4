package redact_test

import (
	"encoding/base64"
	"fmt"

	"github.com/voltmcp/voltmcp/redact"
)

func ExampleArgs() {
	args := []string{"server.js", "--api-key", "hunter2-key", "--token=${env:TOKEN}",
		"https://api.example.com/v1?key=hunter2-key&page=2", "--header", "Authorization: Bearer hunter2-key"}
	for _, a := range redact.Args(args) {
		fmt.Println(a)
	}
	// Output:
	// server.js
	// --api-key
	// <redacted>
	// --token=${env:TOKEN}
	// https://api.example.com/v1?key=REDACTED&page=2
	// --header
	// Authorization: <redacted>
}

func ExampleScrubber() {
	s := redact.NewScrubber("[redacted]", "hunter2-key")
	basic := base64.StdEncoding.EncodeToString([]byte("alice:hunter2-key"))
	fmt.Println(s.Text("login failed for hunter2-key"))
	fmt.Println(s.Text("sent Authorization: Basic " + basic))
	// Output:
	// login failed for [redacted]
	// sent Authorization: Basic YWxpY2U6[redacted]
}
