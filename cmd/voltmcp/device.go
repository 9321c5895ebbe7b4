package main

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"github.com/voltmcp/voltmcp/engine"
)

// The device half of voltmcp auth: the engine's Options.DeviceAuthorize
// (RFC 8628). It prints the verification page, its host on a line of its
// own (the user should check it before entering the code), and the user
// code; the engine polls for the token. Nothing is opened: the device
// flow is for a user whose browser is elsewhere.

func (b *browserAuth) device(_ context.Context, server string, d engine.DeviceAuthorization) error {
	b.asked = true
	// The engine refused any but an https URL with a host; a second look
	// costs nothing, and a refused URL is never printed.
	if err := checkOpenable(d.VerificationURI, false); err != nil {
		return fmt.Errorf("the verification URI is refused (%w); it is not shown", err)
	}
	u, _ := url.Parse(d.VerificationURI)
	fmt.Fprintf(b.out, "To authorize voltmcp for server %s, open this page in a browser on any device:\n\n  %s\n\n", server, clean(d.VerificationURI))
	fmt.Fprintf(b.out, "  Host: %s   <- check that this is your provider before you enter the code\n\n", clean(u.Host))
	fmt.Fprintf(b.out, "and enter the code:\n\n  %s\n\n", clean(d.UserCode))
	if d.VerificationURIComplete != "" && checkOpenable(d.VerificationURIComplete, false) == nil {
		fmt.Fprintf(b.out, "(or open %s, which holds the code)\n", clean(d.VerificationURIComplete))
	}
	wait := b.timeout
	if !d.Expiry.IsZero() {
		if left := time.Until(d.Expiry).Round(time.Second); left > 0 && left < wait {
			wait = left
		}
	}
	fmt.Fprintf(b.out, "Waiting for the approval (up to %s; Ctrl-C to stop) ...\n", wait)
	return nil
}
