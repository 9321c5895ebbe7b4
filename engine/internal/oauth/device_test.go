package oauth

import (
	"errors"
	"strings"
	"testing"

	"golang.org/x/oauth2"
)

func TestCheckDeviceAnswer(t *testing.T) {
	good := func() *oauth2.DeviceAuthResponse {
		return &oauth2.DeviceAuthResponse{DeviceCode: "dc_secret", UserCode: "ABCD-EFGH",
			VerificationURI: "https://login.example/device", VerificationURIComplete: "https://login.example/device?code=ABCD-EFGH", Interval: 5}
	}
	if c, err := checkDeviceAnswer(good()); err != nil || c.UserCode != "ABCD-EFGH" || c.VerificationURIComplete == "" {
		t.Fatalf("good answer: %+v %v", c, err)
	}
	for name, tc := range map[string]struct {
		edit    func(*oauth2.DeviceAuthResponse)
		want    string
		uriRule bool // ErrVerificationURI
	}{
		"no device code":     {func(d *oauth2.DeviceAuthResponse) { d.DeviceCode = "" }, "no device_code", false},
		"long device code":   {func(d *oauth2.DeviceAuthResponse) { d.DeviceCode = strings.Repeat("x", 2049) }, "over 2048", false},
		"no user code":       {func(d *oauth2.DeviceAuthResponse) { d.UserCode = "" }, "no user_code", false},
		"user code escape":   {func(d *oauth2.DeviceAuthResponse) { d.UserCode = "AB\x1b[2JCD" }, "user_code holds a byte outside printable ASCII", false},
		"user code space":    {func(d *oauth2.DeviceAuthResponse) { d.UserCode = "AB CD" }, "user_code holds", false},
		"long user code":     {func(d *oauth2.DeviceAuthResponse) { d.UserCode = strings.Repeat("A", 65) }, "user_code is over 64 bytes", false},
		"http":               {func(d *oauth2.DeviceAuthResponse) { d.VerificationURI = "http://login.example/device" }, "verification_uri is not https", true},
		"no uri":             {func(d *oauth2.DeviceAuthResponse) { d.VerificationURI = "" }, "no verification_uri", true},
		"relative":           {func(d *oauth2.DeviceAuthResponse) { d.VerificationURI = "/device" }, "not an absolute URL", true},
		"userinfo":           {func(d *oauth2.DeviceAuthResponse) { d.VerificationURI = "https://a@login.example/" }, "not an absolute URL", true},
		"no host":            {func(d *oauth2.DeviceAuthResponse) { d.VerificationURI = "https:///device" }, "not an absolute URL", true},
		"newline":            {func(d *oauth2.DeviceAuthResponse) { d.VerificationURI = "https://login.example/\nfake" }, "outside printable ASCII", true},
		"complete http":      {func(d *oauth2.DeviceAuthResponse) { d.VerificationURIComplete = "http://login.example/d" }, "verification_uri_complete is not https", true},
		"complete elsewhere": {func(d *oauth2.DeviceAuthResponse) { d.VerificationURIComplete = "https://evil.example/d" }, "another host", true},
		"negative interval":  {func(d *oauth2.DeviceAuthResponse) { d.Interval = -1 }, "interval is out of range", false},
		"huge interval":      {func(d *oauth2.DeviceAuthResponse) { d.Interval = 1 << 40 }, "interval is out of range", false},
		"long scheme is cut": {func(d *oauth2.DeviceAuthResponse) { d.VerificationURI = strings.Repeat("x", 40) + "://h/" }, "is not https", true},
	} {
		d := good()
		tc.edit(d)
		c, err := checkDeviceAnswer(d)
		if err == nil || !strings.Contains(err.Error(), tc.want) || errors.Is(err, ErrVerificationURI) != tc.uriRule {
			t.Errorf("%s: %+v, %v; want %q (ErrVerificationURI %v)", name, c, err, tc.want, tc.uriRule)
		}
		if err != nil && (strings.Contains(err.Error(), "dc_secret") || strings.Contains(err.Error(), "evil.example") || strings.Contains(err.Error(), "xxxxxxxxxxxxxxxxxxxx")) {
			t.Errorf("%s: the error quotes the answer: %v", name, err)
		}
	}
}
