package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The agent's client of a serve surface, carried in the context of the
// work it asks for (a call of the mcp tool, and a connection that call
// makes), so that a login the work needs can be offered to that client
// by a URL-mode elicitation (MCP 2025-11-25): [CanOfferURL], [OfferURL].
// `voltmcp serve` builds its Options.Authorize on them.

// agentKey is the context key of an agentRef.
type agentKey struct{}

// agentRef finds the session of the agent's client a piece of work came
// from; nil when it is gone.
type agentRef func() *mcp.ServerSession

// withAgent returns ctx carrying the agent's client that find finds.
func withAgent(ctx context.Context, find func() *mcp.ServerSession) context.Context {
	return context.WithValue(ctx, agentKey{}, agentRef(find))
}

// withAgentOf returns ctx carrying the agent's client of from, if from
// has one: a connection made for a call keeps whom to ask for a login.
func withAgentOf(ctx, from context.Context) context.Context {
	if f, ok := from.Value(agentKey{}).(agentRef); ok && f != nil {
		return context.WithValue(ctx, agentKey{}, f)
	}
	return ctx
}

// agentSession returns the session of ctx's agent's client, nil without one.
func agentSession(ctx context.Context) *mcp.ServerSession {
	f, _ := ctx.Value(agentKey{}).(agentRef)
	if f == nil {
		return nil
	}
	return f()
}

// CanOfferURL reports whether [OfferURL] can offer a URL to the user
// for work under ctx, and when it cannot, why: the work did not come
// from an agent's client of a serve surface (a server connected in the
// background, at start), or the client did not declare URL-mode
// elicitation in its capabilities ({"elicitation": {"url": {}}}), or it
// speaks protocol 2026-07-28 or later, where a server may not send it a
// request of its own outside a call's answer.
func CanOfferURL(ctx context.Context) error {
	_, err := urlClient(ctx)
	return err
}

func urlClient(ctx context.Context) (*mcp.ServerSession, error) {
	ss := agentSession(ctx)
	var ip *mcp.InitializeParams
	if ss != nil {
		ip = ss.InitializeParams()
	}
	switch {
	case ss == nil:
		return nil, errors.New("no agent's client to offer the login to: the server was connected in the background, not for an agent's call")
	case ip == nil:
		return nil, errors.New("the client's session was not initialized, so voltmcp serve cannot offer it the login")
	case ip.ProtocolVersion >= protocol20260728:
		return nil, fmt.Errorf("the client speaks MCP %s, where voltmcp serve cannot offer it the login by elicitation", ip.ProtocolVersion)
	case ip.Capabilities == nil || ip.Capabilities.Elicitation == nil || ip.Capabilities.Elicitation.URL == nil:
		return nil, errors.New("the client does not support URL-mode elicitation, so voltmcp serve cannot offer it the login")
	}
	return ss, nil
}

// URLOffer is a URL offered to the user of an agent's client by
// [OfferURL], and the client's answer.
type URLOffer struct {
	// Action is the client's answer: "accept" (the user agreed to open
	// the URL; what happens there is still to come), "decline" or
	// "cancel".
	Action string
	ss     *mcp.ServerSession
	id     string
}

// OfferURL offers url to the user of the agent's client whose work ctx
// carries, by a URL-mode elicitation (elicitation/create with mode
// "url", message and a fresh elicitationId), and waits for the client's
// answer or the end of ctx. It fails as [CanOfferURL] does when there
// is no such client. The caller checks url before (voltmcp serve offers
// only an https URL, or plain http to a loopback authorization server
// under allowInsecureLoopback), and calls [URLOffer.Complete] once the
// interaction at url has ended.
func OfferURL(ctx context.Context, message, url string) (*URLOffer, error) {
	ss, err := urlClient(ctx)
	if err != nil {
		return nil, err
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	o := &URLOffer{ss: ss, id: hex.EncodeToString(b[:])}
	res, err := ss.Elicit(ctx, &mcp.ElicitParams{Mode: "url", Message: message, URL: url, ElicitationID: o.id})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("the client did not take the URL-mode elicitation: %w", err)
	}
	switch res.Action {
	case "accept", "decline", "cancel":
		o.Action = res.Action
	default:
		return nil, errors.New("the client answered the URL-mode elicitation with an action that is not accept, decline or cancel")
	}
	return o, nil
}

// Complete tells the client that the interaction at the offered URL has
// ended (notifications/elicitation/complete with its elicitationId).
func (o *URLOffer) Complete(ctx context.Context) error {
	return o.ss.NotifyElicitationComplete(ctx, &mcp.ElicitationCompleteParams{ElicitationID: o.id})
}
