package owner

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestLoopbackHostAndOrigin(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost": true, "LOCALHOST:8080": true, "127.0.0.1": true, "127.0.0.2:1": true, "[::1]:80": true, "[::1]": true, "::1": true,
		"evil.example": false, "evil.example:80": false, "a.localhost": false, "10.0.0.1:80": false, "": false, "0.0.0.0": false,
	} {
		if got := LoopbackHost(host); got != want {
			t.Errorf("LoopbackHost(%q) = %v, want %v", host, got, want)
		}
	}
	for origin, want := range map[string]bool{
		"http://localhost:3000": true, "https://127.0.0.1": true, "http://[::1]:1/": true,
		"null": false, "file://localhost": false, "http://user@localhost": false, "http://localhost/path": false,
		"https://evil.example": false, "ws://localhost": false,
	} {
		if got := LoopbackOrigin(origin); got != want {
			t.Errorf("LoopbackOrigin(%q) = %v, want %v", origin, got, want)
		}
	}
}

func TestHandler(t *testing.T) {
	const token = "the-token"
	h := Handler([]byte(token), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) }))
	for _, c := range []struct {
		name   string
		host   string
		header http.Header
		want   int
	}{
		{"the token", "127.0.0.1:1", http.Header{"Authorization": {"Bearer " + token}}, http.StatusTeapot},
		{"lower-case scheme, spaces", "localhost", http.Header{"Authorization": {"bearer   " + token}}, http.StatusTeapot},
		{"loopback origin", "localhost", http.Header{"Authorization": {"Bearer " + token}, "Origin": {"http://localhost:9"}}, http.StatusTeapot},
		{"no credential", "localhost", nil, http.StatusUnauthorized},
		{"wrong token", "localhost", http.Header{"Authorization": {"Bearer the-tokeN"}}, http.StatusUnauthorized},
		{"basic", "localhost", http.Header{"Authorization": {"Basic " + token}}, http.StatusUnauthorized},
		{"two credentials", "localhost", http.Header{"Authorization": {"Bearer " + token, "Bearer " + token}}, http.StatusUnauthorized},
		{"foreign host", "evil.example", http.Header{"Authorization": {"Bearer " + token}}, http.StatusForbidden},
		{"foreign origin", "localhost", http.Header{"Authorization": {"Bearer " + token}, "Origin": {"https://evil.example"}}, http.StatusForbidden},
		{"two origins", "localhost", http.Header{"Authorization": {"Bearer " + token}, "Origin": {"http://localhost", "http://localhost"}}, http.StatusForbidden},
	} {
		r := httptest.NewRequest(http.MethodPost, "/", nil)
		r.Host = c.host
		for k, v := range c.header {
			r.Header[k] = v
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != c.want {
			t.Errorf("%s: status %d, want %d", c.name, w.Code, c.want)
		}
		if w.Code == http.StatusUnauthorized && !strings.HasPrefix(w.Header().Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("%s: WWW-Authenticate %q", c.name, w.Header().Get("WWW-Authenticate"))
		}
		if w.Code != c.want && strings.Contains(w.Body.String(), token) {
			t.Errorf("%s: the answer quotes the token", c.name)
		}
	}
	r := httptest.NewRequest(http.MethodPost, "/", nil)
	r.Host = "localhost"
	r.Header.Set("Authorization", "Bearer ")
	w := httptest.NewRecorder()
	Handler(nil, http.NotFoundHandler()).ServeHTTP(w, r)
	if w.Code != http.StatusUnauthorized {
		t.Errorf("empty token: status %d", w.Code)
	}
}
