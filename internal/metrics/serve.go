package metrics

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// CheckAddress reports whether address is one the metrics can be served
// at: host:port, the host a name or an IP address (empty: every
// interface), the port a number.
func CheckAddress(address string) error {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return errors.New("a host:port, such as 127.0.0.1:9464")
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || (n == 0 && port != "0") {
		return errors.New("a host:port whose port is a number between 0 and 65535")
	}
	if host != "" && net.ParseIP(host) == nil && !validHostname(host) {
		return fmt.Errorf("a host:port whose host is a name or an IP address, not %q", host)
	}
	return nil
}

func validHostname(h string) bool {
	for _, r := range h {
		if !(r == '-' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

// Serve serves s's metrics in the Prometheus text format at
// http://address/metrics until stop is called; it returns once it
// listens, with the address it listens at (the port chosen when address
// asks for port 0). An address it cannot listen on, one in use say, is an
// error that names it and the connector.
func (s *Set) Serve(address string) (listening string, stop func(), err error) {
	ln, err := net.Listen("tcp", address)
	if err != nil {
		return "", nil, fmt.Errorf("serve the metrics of connector %q at %s: %w", s.labels.ConnectorID, address, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln) // ends with Close
	}()
	return ln.Addr().String(), func() {
		_ = srv.Close()
		<-done
	}, nil
}
