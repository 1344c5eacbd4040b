package schema_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/connkit/connkit/internal/schema"
)

func ExampleNewInMemory() {
	ctx := context.Background()
	r := schema.NewInMemory()
	text := []byte(`{"type":"record","name":"user","fields":[{"name":"id","type":"long"}]}`)
	s, _ := r.Create(ctx, "users", schema.TypeAvro, text)
	again, _ := r.Create(ctx, "users", schema.TypeAvro, text)
	_, err := r.Get(ctx, "users", 2)
	fmt.Println(s.Version, again.Version)
	fmt.Println(errors.Is(err, schema.ErrVersionNotFound), err)
	// Output:
	// 1 1
	// true schema subject "users" version 2: schema version not found
}

func ExampleCached() {
	ctx := context.Background()
	r := schema.Cached(schema.NewInMemory())
	s, _ := r.Create(ctx, "users", schema.TypeAvro,
		[]byte(`{"type":"record","name":"user","fields":[{"name":"id","type":"long"}]}`))
	got, _ := r.Get(ctx, "users", s.Version) // answered from the cache
	fmt.Println(got.Subject, got.Version)
	// Output: users 1
}

func ExampleFromEnv() {
	// A plugin passes os.Getenv; Conduit sets the target and the token.
	r, closer, err := schema.FromEnv(os.Getenv)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer closer.Close()
	codecs := schema.NewCodecs(r)
	ctx := schema.NewContext(context.Background(), codecs)
	fmt.Println(schema.FromContext(ctx) == codecs)
	// Output: true
}

func ExampleDial() {
	c, err := schema.Dial("127.0.0.1:8185", "token-from-conduit")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	r := schema.Cached(c)
	_ = r // Create and Get now call Conduit's schema service once per schema.
}

func ExampleExtract() {
	text, _ := schema.Extract(opencdc.StructuredData{"id": int64(1), "name": "Ada"})
	fmt.Println(string(text))
	// Output: {"name":"record","type":"record","fields":[{"name":"id","type":"long"},{"name":"name","type":"string"}]}
}

func ExampleNewCodec() {
	c, _ := schema.NewCodec(schema.Schema{
		Subject: "users",
		Version: 1,
		Type:    schema.TypeAvro,
		Bytes: []byte(`{"type":"record","name":"user","fields":[
			{"name":"id","type":"long"},{"name":"name","type":["null","string"]}]}`),
	})
	b, _ := c.Encode(opencdc.StructuredData{"id": int64(7), "name": "Ada"})
	d, _ := c.Decode(b)
	fmt.Printf("%x\n%T %v, %T %v\n", b, d["id"], d["id"], d["name"], d["name"])
	// Output:
	// 0e0206416461
	// int64 7, string Ada
}

func ExampleNewCodecs() {
	ctx := context.Background()
	codecs := schema.NewCodecs(schema.NewInMemory())

	// A source: register the payload's shape once, encode, name the schema.
	payload := opencdc.StructuredData{"id": int64(7), "name": "Ada"}
	s, c, _ := codecs.ForData(ctx, "users.payload", payload)
	b, _ := c.Encode(payload)
	fmt.Println(s.Subject, s.Version, len(b))

	// A destination: look the schema up by the names in the metadata.
	c, _ = codecs.Get(ctx, s.Subject, s.Version)
	d, _ := c.Decode(b)
	fmt.Println(d)
	// Output:
	// users.payload 1 5
	// map[id:7 name:Ada]
}
