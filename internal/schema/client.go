package schema

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/conduitio/conduit-connector-protocol/pconnutils"
	"github.com/conduitio/conduit-connector-protocol/pconnutils/v1/client"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// Client is a [Registry] backed by Conduit's schema service, the "connector
// utilities" gRPC server Conduit names in CONDUIT_CONNECTOR_UTILITIES_GRPC_TARGET.
// It makes a call per method call; wrap it with [Cached].
type Client struct {
	conn  *grpc.ClientConn
	svc   *client.SchemaServiceClient
	token string
}

// Dial returns a Client for the schema service at target (a gRPC target
// such as "127.0.0.1:8185"), presenting token, the connector's
// CONDUIT_CONNECTOR_TOKEN, with every call. The connection is plaintext:
// Conduit serves it on loopback. Dial does not wait for the server; a call
// made before it is reachable fails.
func Dial(target, token string) (*Client, error) {
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("schema service %q: %w", target, err)
	}
	return &Client{conn: conn, svc: client.NewSchemaServiceClient(conn), token: token}, nil
}

// Close closes the connection. Calls after Close fail.
func (c *Client) Close() error {
	return c.conn.Close()
}

func (c *Client) withToken(ctx context.Context) context.Context {
	if c.token == "" {
		return ctx
	}
	return pconnutils.ContextWithConnectorToken(ctx, c.token)
}

// Create implements [Registry].
func (c *Client) Create(ctx context.Context, subject string, typ Type, text []byte) (Schema, error) {
	resp, err := c.svc.CreateSchema(c.withToken(ctx), pconnutils.CreateSchemaRequest{
		Subject: subject,
		Type:    typ,
		Bytes:   text,
	})
	if err != nil {
		return Schema{}, fmt.Errorf("create schema subject %q: %w", subject, wireError(err))
	}
	return resp.Schema, nil
}

// Get implements [Registry].
func (c *Client) Get(ctx context.Context, subject string, version int) (Schema, error) {
	resp, err := c.svc.GetSchema(c.withToken(ctx), pconnutils.GetSchemaRequest{
		Subject: subject,
		Version: version,
	})
	if err != nil {
		return Schema{}, fmt.Errorf("schema subject %q version %d: %w", subject, version, wireError(err))
	}
	return resp.Schema, nil
}

// wireError makes err, as the protocol's client returns it, answer errors.Is
// for the sentinel it carries. The protocol recognises only some sentinels
// by message (v0.9.4 misses ErrVersionNotFound), and none once a server has
// wrapped them.
func wireError(err error) error {
	s := knownError(err)
	if s == nil || errors.Is(err, s) {
		return err
	}
	msg := err.Error()
	if msg == s.Error() {
		return s
	}
	return fmt.Errorf("%s: %w", strings.TrimSuffix(msg, ": "+s.Error()), s)
}
