package transport

import (
	"context"
	"io"
	"net/http"
	"sync"
	"time"
)

// ssePostWait bounds a POST of a legacy SSE session: the server answers
// it at once (202) and sends the reply on the session's stream.
const ssePostWait = 30 * time.Second

// ssePosts bounds the POSTs of one legacy SSE session. The reference
// servers never answer a POST for a session they have dropped, and the
// SDK's client makes one when it replies to a server's request as the
// session closes; closing a session waits for those replies, so it
// would wait forever. A POST ends after wait, or at once when
// [HeaderTransport.EndSession] is called, before the session is closed.
// It sits below the login of an OAuth server (sseOAuth), so that it
// bounds each request, never a login.
type ssePosts struct {
	next   http.RoundTripper
	wait   time.Duration
	ctx    context.Context // done once the session ends
	cancel context.CancelFunc
}

// newSSEPosts returns the ssePosts of a session whose requests go on
// through next, each POST bounded by wait (zero: ssePostWait).
func newSSEPosts(next http.RoundTripper, wait time.Duration) *ssePosts {
	if wait <= 0 {
		wait = ssePostWait
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &ssePosts{next: next, wait: wait, ctx: ctx, cancel: cancel}
}

// end ends the POSTs in flight and those to come.
func (s *ssePosts) end() { s.cancel() }

func (s *ssePosts) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method != http.MethodPost {
		return s.next.RoundTrip(r)
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.wait)
	stop := context.AfterFunc(s.ctx, cancel)
	end := func() { stop(); cancel() }
	resp, err := s.next.RoundTrip(r.WithContext(ctx))
	if err != nil {
		end()
		return nil, err
	}
	resp.Body = &closeHook{ReadCloser: resp.Body, hook: end}
	return resp, nil
}

// closeHook is a body that runs hook once it is closed.
type closeHook struct {
	io.ReadCloser
	once sync.Once
	hook func()
}

func (c *closeHook) Close() error {
	err := c.ReadCloser.Close()
	c.once.Do(c.hook)
	return err
}
