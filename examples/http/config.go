package httpsink

import (
	"fmt"
	"net/url"
	"time"

	"github.com/connkit/connkit/sdk/config"
)

// Config is the destination's configuration.
type Config struct {
	URL     string        `param:"url" validate:"required" desc:"The http or https URL each batch of records is POSTed to, as a JSON array. Credentials in it (https://user:password@host/…) are sent as basic authentication and left out of errors and logs."`
	Timeout time.Duration `param:"timeout" default:"30s" validate:"gt=0" desc:"How long one request may take, from connecting to reading the response; a request that takes longer is abandoned, and its records are sent again."`
}

// Validate checks that url is an http or https URL with a host.
func (c Config) Validate() error {
	if c.URL == "" {
		return nil // required: reported by the tags
	}
	_, err := parseURL(c.URL)
	return err
}

// parseURL parses an http or https URL with a host; its error is a
// *config.ParameterError naming the parameter, and never repeats the
// credentials the URL may hold.
func parseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		// url.Parse's error quotes the URL; its cause does not.
		cause := err
		if uerr, ok := err.(*url.Error); ok {
			cause = uerr.Err
		}
		return nil, &config.ParameterError{Name: "url", Expected: fmt.Sprintf("an http or https URL, such as https://example.com/records; it does not parse: %v", cause)}
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, &config.ParameterError{Name: "url", Value: redact(u), Expected: "an http or https URL with a host, such as https://example.com/records"}
	}
	return u, nil
}

// redact returns u without what may be a secret, for errors: its user
// and password, its query (which often holds a token) and its fragment.
func redact(u *url.URL) string {
	r := *u
	r.User = nil
	if r.RawQuery != "" || r.ForceQuery {
		r.RawQuery, r.ForceQuery = "…", false
	}
	r.Fragment, r.RawFragment = "", ""
	return r.String()
}
