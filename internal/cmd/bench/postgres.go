package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/connkit/connkit/internal/chart"
	"github.com/connkit/connkit/internal/host"
	"github.com/connkit/connkit/internal/pgtest"
	"github.com/connkit/connkit/internal/schema"
	"github.com/jackc/pgx/v5"
)

// keylessTable is the bench table without a key, for records without one,
// which the destination writes with plain inserts.
const keylessTable = `DROP TABLE IF EXISTS bench; CREATE TABLE bench (id bigint, a text, b text, n int)`

// postgresMode measures Postgres destinations: rows per second into the
// bench table, one record per message as Conduit's default engine sends
// them, with sdk.batch.size set to each batch size, for one or two plugins
// side by side, with schemas off (structured keys and payloads) and on (Avro
// named by schemas in the host's schema service, as a source of Conduit's
// sends them). Each run starts from an empty table and ends by checking its
// rows.
func postgresMode(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("postgres", flag.ExitOnError)
	var f pgFlags
	f.define(fs, "destination plugin", "second destination plugin, measured side by side")
	f.defineConfig(fs)
	sizes := intsFlag(fs, "batch-sizes", "1,10,100,1000,10000", 0, "comma-separated batch sizes; 0 sets no sdk.batch.size, the destination's default")
	keyless := fs.Bool("keyless", false, "records without a key (id in the payload) into a table without one: plain inserts; needs -schemas off")
	records := fs.Int64("records", 50000, "rows per run")
	out := fs.String("out", "bench/results", "directory for postgres.md and postgres.svg (postgres-update.* with -operation update, postgres-keyless.* with -keyless)")
	perMessage := fs.Int("per-message", 1, "records per message: 1 as Conduit's default engine sends them; 0 for messages of the batch size, as the v2 engine carries a source's batches")
	operation := fs.String("operation", "create", "operation of the keyed records: create (the destination may try a plain insert first) or update (every record an upsert)")
	rounds := fs.Int("rounds", 1, "rounds of runs, alternating COPY and the plugins; the table shows the round with the median share of COPY")
	modes := fs.String("schemas", "off,on", "comma-separated: off sends structured records; on sends Avro, its schemas in the host's schema service")
	_ = fs.Parse(args)

	var schemaModes []string
	for m := range strings.SplitSeq(*modes, ",") {
		if m = strings.TrimSpace(m); m != "off" && m != "on" {
			return fmt.Errorf("-schemas: got %q, expected off, on or both separated by a comma", m)
		}
		schemaModes = append(schemaModes, m)
	}
	op := opencdc.OperationCreate
	switch *operation {
	case "create":
	case "update":
		op = opencdc.OperationUpdate
	default:
		return fmt.Errorf("-operation: got %q, expected create or update", *operation)
	}
	if *rounds < 1 {
		return fmt.Errorf("-rounds: got %d, expected 1 or more", *rounds)
	}
	ddl, record := createTables("bench"), func(i int64) opencdc.Record {
		r := pgRecord(i)
		r.Operation = op
		return r
	}
	if *keyless {
		if slices.Contains(schemaModes, "on") {
			return errors.New("-keyless: records without a key are sent with schemas off only; add -schemas off")
		}
		ddl, record = keylessTable, keylessRecord
	}
	plugins, conn, closeDB, err := f.open(ctx, ddl)
	if err != nil {
		return err
	}
	defer closeDB()
	makers := map[string]func(int64) opencdc.Record{"off": record}
	if slices.Contains(schemaModes, "on") {
		if makers["on"], err = avroRecords(ctx, schemas.Registry, record); err != nil {
			return err
		}
	}

	type run struct {
		plugin, schemas string
		batch           int
	}
	results := map[run][]pgResult{} // a result per round
	total, done := *rounds*len(*sizes)*len(schemaModes)*(1+len(plugins)), 0
	progress := func(batch int, mode, name string) {
		done++
		fmt.Fprintf(os.Stderr, "\r\033[K[%d/%d] batch %d, schemas %s, %s ...", done, total, batch, mode, name)
	}
	// check returns an error unless the table holds the rows sent.
	check := func() error {
		var rows, right int64
		if err := conn.QueryRow(ctx, benchCheck).Scan(&rows, &right); err != nil {
			return err
		}
		if rows != *records || right != *records {
			return fmt.Errorf("%d rows in the table, %d of them with the values sent, expected %d", rows, right, *records)
		}
		return nil
	}
	for range *rounds {
		for _, batch := range *sizes {
			for _, mode := range schemaModes {
				progress(batch, mode, "COPY")
				if _, err := conn.Exec(ctx, "TRUNCATE bench"); err != nil {
					return err
				}
				copyRate, err := copyRows(ctx, conn, *records)
				if err == nil {
					err = check()
				}
				if err != nil {
					return fmt.Errorf("COPY: %w", err)
				}
				for _, p := range plugins {
					progress(batch, mode, p.name)
					cfg := host.Settings{"url": f.url, "table": "bench"}
					if batch > 0 {
						cfg["sdk.batch.size"] = strconv.Itoa(batch)
					}
					maps.Copy(cfg, p.config)
					// Every run sends the same positions: an exactly-once
					// destination must not find the last run's.
					positions := cmp.Or(cfg["exactlyOnce.table"], "connkit_positions")
					if _, err := conn.Exec(ctx, "TRUNCATE bench; DROP TABLE IF EXISTS "+pgx.Identifier(strings.Split(positions, ".")).Sanitize()); err != nil {
						return err
					}
					r := pgResult{copy: copyRate}
					per := *perMessage
					if per == 0 {
						per = batch
					}
					r.st, r.cpu, r.err = feedPostgres(ctx, p.path, cfg, *records, per, makers[mode])
					var stopErr *host.StopError
					if errors.As(r.err, &stopErr) {
						r.note, r.err = "Stop failed after every ack: "+oneLine(stopErr.Err), nil
					}
					if r.err == nil {
						r.err = check()
					}
					k := run{p.name, mode, batch}
					results[k] = append(results[k], r)
					if ctx.Err() != nil {
						return ctx.Err()
					}
				}
			}
		}
	}
	fmt.Fprintln(os.Stderr, "\r\033[Kdone")

	// typical is the round of the median share of COPY, the first failed
	// round if one failed.
	typical := func(rs []pgResult) pgResult {
		for _, r := range rs {
			if r.err != nil {
				return r
			}
		}
		return medianBy(rs, pgResult.share)
	}
	var t strings.Builder
	msgs := "one record per message"
	if *perMessage != 1 {
		msgs = fmt.Sprintf("%d records per message (0: the batch size)", *perMessage)
	}
	into := fmt.Sprintf("%s, keyed %s records (upserts on the key)", rowColumns, op)
	if *keyless {
		into = "(id bigint, a text, b text, n int), records without a key (plain inserts)"
	}
	fmt.Fprintf(&t, "%d rows per run into %s, %s, sdk.batch.size on the destination (0: not set).\n\n", *records, into, msgs)
	t.WriteString("COPY is the database's own limit: a binary `COPY bench FROM STDIN` of the same rows through pgx, into the same empty table, timed from its start to its end, just before each plugin's run; a plugin's share is its rows/s over that COPY's.\n\n")
	t.WriteString("Schemas off: keys and payloads are structured data. Schemas on: they are Avro, named by their schemas' subject and version in metadata, the schemas in the host's schema service, as Conduit's sources send them; the destinations decode them with their sdk.schema.extract.* parameters at the defaults.\n\n")
	t.WriteString("The plugin's processor time per row counts the plugin process alone, not the database or the host; it varies less than rows/s on a busy machine.\n\n")
	if *rounds > 1 {
		fmt.Fprintf(&t, "Each figure is from the round (of %d, alternating) with the median share of COPY.\n\n", *rounds)
	}
	writeTableHead(&t, "| batch | schemas |"+pluginColumns(names(plugins), " %[1]s rows/s | %[1]s share of COPY | %[1]s ack p50 / p99 | %[1]s CPU µs/row |", " ratio |"))
	var series []chart.Series
	for _, mode := range schemaModes {
		for i, p := range plugins {
			color := chart.Palette[i]
			if mode == "on" {
				color = chart.Palette[2+i]
			}
			series = append(series, chart.Series{Label: p.name + ", schemas " + mode, Color: color, Dashed: i == 1})
		}
	}
	labels := make([]string, len(*sizes))
	for bi, batch := range *sizes {
		labels[bi] = strconv.Itoa(batch)
		for mi, mode := range schemaModes {
			fmt.Fprintf(&t, "| %d | %s |", batch, mode)
			for i, p := range plugins {
				i := mi*len(plugins) + i
				r := typical(results[run{p.name, mode, batch}])
				if r.err != nil {
					fmt.Fprintf(&t, " failed: %s | | | |", oneLine(r.err))
					series[i].Values = append(series[i].Values, math.NaN())
					continue
				}
				note := ""
				if r.note != "" {
					note = " (" + r.note + ")"
				}
				fmt.Fprintf(&t, " %.0f%s | %.0f%% of %.0f | %s / %s | %.1f |", r.st.RecordsPerSecond(), note, 100*r.share(), r.copy,
					ms(r.st.Latency(0.5)), ms(r.st.Latency(0.99)), float64(r.cpu.Microseconds())/float64(r.st.Records))
				series[i].Values = append(series[i].Values, r.st.RecordsPerSecond())
			}
			if len(plugins) == 2 {
				ra, rb := typical(results[run{plugins[0].name, mode, batch}]), typical(results[run{plugins[1].name, mode, batch}])
				if ra.err == nil && rb.err == nil {
					fmt.Fprintf(&t, " %.1fx |", ra.share()/rb.share())
				} else {
					t.WriteString(" |")
				}
			}
			t.WriteString("\n")
		}
	}
	svg := chart.Line("Postgres destination: rows per second by batch size", "batch size", "rows/s (log scale)", labels, series, true)
	name := "postgres" // keyed creates; the other kinds of rows have files of their own
	switch {
	case *keyless:
		name += "-keyless"
	case op == opencdc.OperationUpdate:
		name += "-update"
	}
	return publish(*out, t.String(), map[string]string{name + ".md": t.String(), name + ".svg": svg})
}

// copyRows copies rows 1 to n of pgRecord's values into the bench table
// with a binary COPY, and returns how many rows per second it wrote. As
// host.Feed does for the plugins, it makes the rows before it starts the
// clock.
func copyRows(ctx context.Context, conn *pgx.Conn, n int64) (float64, error) {
	rows := make([][]any, n)
	for i := range n {
		id := i + 1
		rows[i] = []any{id, "row-" + strconv.FormatInt(id, 10), "a text column of moderate length", id % 1000}
	}
	start := time.Now()
	_, err := conn.CopyFrom(ctx, pgx.Identifier{"bench"}, []string{"id", "a", "b", "n"}, pgx.CopyFromRows(rows))
	return float64(n) / time.Since(start).Seconds(), err
}

// pgResult is a plugin's run in the postgres mode.
type pgResult struct {
	st   host.Stats
	cpu  time.Duration // the plugin's processor time
	err  error
	note string
	copy float64 // COPY's rows/s, measured just before, into the same table
}

// share is the run's rows/s as a share of COPY's.
func (r pgResult) share() float64 { return r.st.RecordsPerSecond() / r.copy }

// plugin is a plugin measured under a name: its binary, its extra
// settings, and for a Postgres source the dialect they are spelled in (see
// dialects).
type plugin struct {
	name, path string
	config     host.Settings
	dialect    string
}

// names returns the plugins' names.
func names(plugins []plugin) []string {
	var out []string
	for _, p := range plugins {
		out = append(out, p.name)
	}
	return out
}

// pgFlags are the flags of the modes that measure Postgres plugins: -plugin
// and -name, -vs-plugin and -vs-name for a second plugin measured side by
// side, and -url for the PostgreSQL server.
type pgFlags struct {
	a, b         plugin
	url          string
	withDialects bool // -dialect and -vs-dialect are defined
}

// define defines the flags; what and vsWhat say what -plugin and
// -vs-plugin name.
func (f *pgFlags) define(fs *flag.FlagSet, what, vsWhat string) {
	fs.StringVar(&f.a.path, "plugin", "bin/connkit-postgres", what)
	fs.StringVar(&f.a.name, "name", "connkit", "name of the plugin")
	fs.StringVar(&f.b.path, "vs-plugin", "", vsWhat)
	fs.StringVar(&f.b.name, "vs-name", "incumbent", "name of the second plugin")
	fs.StringVar(&f.url, "url", "", "PostgreSQL URL; empty starts a throwaway server from the machine's binaries")
}

// defineConfig defines -config and -vs-config, the plugins' extra
// settings.
func (f *pgFlags) defineConfig(fs *flag.FlagSet) {
	f.a.config, f.b.config = host.Settings{}, host.Settings{}
	fs.Var(f.a.config, "config", "extra parameter as key=value (repeatable)")
	fs.Var(f.b.config, "vs-config", "second plugin's extra parameter (repeatable)")
}

// defineDialects defines -dialect and -vs-dialect, how the plugins spell
// their settings (see dialects); what and vsWhat say so.
func (f *pgFlags) defineDialects(fs *flag.FlagSet, what, vsWhat string) {
	f.withDialects = true
	fs.StringVar(&f.a.dialect, "dialect", "connkit", what)
	fs.StringVar(&f.b.dialect, "vs-dialect", "incumbent", vsWhat)
}

// plugins returns the plugins to measure: the first, and the second if
// -vs-plugin names one, under a name of its own; each in a dialect, if the
// flags have them.
func (f *pgFlags) plugins() ([]plugin, error) {
	if f.withDialects {
		for _, p := range []plugin{f.a, f.b} {
			if _, ok := dialects[p.dialect]; !ok {
				return nil, fmt.Errorf("-dialect, -vs-dialect: got %q, expected connkit or incumbent", p.dialect)
			}
		}
	}
	if f.b.path == "" {
		return []plugin{f.a}, nil
	}
	if f.a.name == f.b.name {
		return nil, errors.New("-name and -vs-name: expected two names")
	}
	return []plugin{f.a, f.b}, nil
}

// open returns the plugins to measure (see plugins) and a connection to
// the database -url names, or to a throwaway server (see database), where
// ddl has created the run's tables; closeDB closes both.
func (f *pgFlags) open(ctx context.Context, ddl string) (plugins []plugin, conn *pgx.Conn, closeDB func(), err error) {
	if plugins, err = f.plugins(); err != nil {
		return nil, nil, nil, err
	}
	if conn, closeDB, err = database(ctx, &f.url, ddl); err != nil {
		return nil, nil, nil, err
	}
	return plugins, conn, closeDB, nil
}

// database connects to *url or, if it is empty, to a throwaway server it
// starts from the machine's binaries, setting *url, and runs ddl, which
// creates the run's tables; done closes both.
func database(ctx context.Context, url *string, ddl string) (conn *pgx.Conn, done func(), err error) {
	stop := func() {}
	if *url == "" {
		srv, err := pgtest.Start()
		if err != nil {
			return nil, nil, err
		}
		stop = func() { _ = srv.Stop() }
		*url = srv.URL
	}
	conn, err = pgx.Connect(ctx, *url)
	if err != nil {
		stop()
		return nil, nil, fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	done = func() { conn.Close(context.Background()); stop() }
	if _, err := conn.Exec(ctx, ddl); err != nil {
		done()
		return nil, nil, err
	}
	return conn, done, nil
}

// rowColumns are the columns of the tables the Postgres modes fill: a
// bigint key, two text columns and an int, as pgRecord and insertRows
// make them.
const rowColumns = "(id bigint PRIMARY KEY, a text, b text, n int)"

// createTables returns the statements that create the named tables of
// rowColumns, if they do not exist.
func createTables(tables ...string) string {
	var b strings.Builder
	for _, table := range tables {
		fmt.Fprintf(&b, "CREATE TABLE IF NOT EXISTS %s %s;\n", table, rowColumns)
	}
	return b.String()
}

// insertRows returns the statement that inserts rows first to last of
// pgRecord's values into table.
func insertRows(table string, first, last int64) string {
	return fmt.Sprintf("INSERT INTO %s SELECT i, 'row-' || i, 'a text column of moderate length', i %% 1000 FROM generate_series(%d, %d) i", table, first, last)
}

// fillTable makes table, of rowColumns, hold rows 1 to n of pgRecord's
// values, unless it holds n rows already (insertRows made them all), and
// analyzes it.
func fillTable(ctx context.Context, conn *pgx.Conn, table string, n int64) error {
	var have int64
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&have); err != nil {
		return err
	}
	if have != n {
		if _, err := conn.Exec(ctx, "TRUNCATE "+table+"; "+insertRows(table, 1, n)); err != nil {
			return err
		}
	}
	_, err := conn.Exec(ctx, "VACUUM ANALYZE "+table)
	return err
}

// benchCheck counts the rows in the bench table, and those holding the
// values pgRecord sent for their id.
const benchCheck = `SELECT count(*), count(*) FILTER (WHERE a = 'row-' || id AND b = 'a text column of moderate length' AND n = id % 1000) FROM bench`

// pgRecord is record i for the bench table, keyed by id.
func pgRecord(i int64) opencdc.Record {
	return opencdc.Record{
		Operation: opencdc.OperationCreate,
		Key:       opencdc.StructuredData{"id": i},
		Payload: opencdc.Change{After: opencdc.StructuredData{
			"a": "row-" + strconv.FormatInt(i, 10),
			"b": "a text column of moderate length",
			"n": i % 1000,
		}},
	}
}

// keylessRecord is pgRecord without a key, its id in the payload.
func keylessRecord(i int64) opencdc.Record {
	r := pgRecord(i)
	r.Payload.After.(opencdc.StructuredData)["id"] = i
	r.Key = nil
	return r
}

// avroRecords registers the schemas of pgRecord's key and payload with reg
// and returns a function making record's records (pgRecord's, of some
// operation) with key and payload encoded as Avro and named in metadata,
// as a Conduit source sends them.
func avroRecords(ctx context.Context, reg schema.Registry, record func(int64) opencdc.Record) (func(int64) opencdc.Record, error) {
	codec := func(subject string, d opencdc.StructuredData) (*schema.Codec, error) {
		text, err := schema.Extract(d)
		if err != nil {
			return nil, err
		}
		s, err := reg.Create(ctx, subject, schema.TypeAvro, text)
		if err != nil {
			return nil, err
		}
		return schema.NewCodec(s)
	}
	sample := pgRecord(1)
	key, err := codec("bench.key", sample.Key.(opencdc.StructuredData))
	if err != nil {
		return nil, err
	}
	payload, err := codec("bench.payload", sample.Payload.After.(opencdc.StructuredData))
	if err != nil {
		return nil, err
	}
	return func(i int64) opencdc.Record {
		r := record(i)
		k, kerr := key.Encode(r.Key.(opencdc.StructuredData))
		p, perr := payload.Encode(r.Payload.After.(opencdc.StructuredData))
		if kerr != nil || perr != nil {
			panic(errors.Join(kerr, perr)) // the data has the schemas' shape
		}
		r.Key, r.Payload.After = opencdc.RawData(k), opencdc.RawData(p)
		r.Metadata = opencdc.Metadata{
			opencdc.MetadataKeySchemaSubject:     key.Schema().Subject,
			opencdc.MetadataKeySchemaVersion:     strconv.Itoa(key.Schema().Version),
			opencdc.MetadataPayloadSchemaSubject: payload.Schema().Subject,
			opencdc.MetadataPayloadSchemaVersion: strconv.Itoa(payload.Schema().Version),
		}
		return r
	}, nil
}

// feedPostgres sends n records made by record to a destination plugin, and
// returns the processor time the plugin spent on them.
func feedPostgres(ctx context.Context, path string, cfg host.Settings, n int64, perMessage int, record func(int64) opencdc.Record) (host.Stats, time.Duration, error) {
	dst, p, err := launchDestination(path, cfg)
	if err != nil {
		return host.Stats{}, 0, err
	}
	defer p.Kill()
	before, err := p.CPUTime()
	if err != nil {
		return host.Stats{}, 0, err
	}
	st, err := host.Feed(ctx, dst, n, perMessage, record)
	after, cerr := p.CPUTime()
	return st, after - before, errors.Join(err, cerr)
}

// The Postgres sources: bench pgsource.

// snapshotFetchSize is the rows per snapshot query for both dialects:
// connkit's default. The incumbent's default of 50000 makes it send 50000
// records in one message, over gRPC's 4 MiB limit for this table's rows.
const snapshotFetchSize = "10000"

// sourceDialect says how a Postgres source plugin spells its settings.
type sourceDialect struct {
	snapshot, never   func(table string) host.Settings
	slot, publication string
}

var dialects = map[string]sourceDialect{
	"connkit": {
		snapshot: func(t string) host.Settings {
			return host.Settings{"tables": t, "snapshot.mode": "initial", "snapshot.fetchSize": snapshotFetchSize}
		},
		never:       func(t string) host.Settings { return host.Settings{"tables": t, "snapshot.mode": "never"} },
		slot:        "slot.name",
		publication: "publication.name",
	},
	"incumbent": {
		snapshot: func(t string) host.Settings {
			return host.Settings{"tables": t, "snapshotMode": "initial", "snapshot.fetchSize": snapshotFetchSize, "cdcMode": "logrepl", "logrepl.withAvroSchema": "false"}
		},
		never: func(t string) host.Settings {
			return host.Settings{"tables": t, "snapshotMode": "never", "cdcMode": "logrepl", "logrepl.withAvroSchema": "false"}
		},
		slot:        "logrepl.slotName",
		publication: "logrepl.publicationName",
	},
}

// pgsourceMode measures Postgres sources over the plugin protocol: records
// per second of a snapshot of a table of -records rows, and of the changes
// (-changes inserts, committed before reading starts) streamed through
// logical replication, for one or two plugins side by side, once per batch
// setting. Each run has a fresh replication slot and publication and must
// deliver every record.
func pgsourceMode(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("pgsource", flag.ExitOnError)
	var f pgFlags
	f.define(fs, "source plugin", "second source plugin, measured side by side")
	f.defineConfig(fs)
	f.defineDialects(fs, "how the plugin spells its settings: connkit or incumbent", "how the second plugin spells its settings")
	sizes := intsFlag(fs, "batch-sizes", "0,10000", 0, "comma-separated sdk.batch.size values; 0 sets no sdk.batch parameter (the plugin's default), others come with sdk.batch.delay=100ms")
	records := fs.Int64("records", 100000, "rows in the snapshot")
	changes := fs.Int64("changes", 100000, "changes to stream")
	out := fs.String("out", "bench/results", "directory for pgsource.md and pgsource.svg")
	rounds := fs.Int("rounds", 3, "runs of every measurement, interleaved; the median is reported")
	_ = fs.Parse(args)

	if *rounds < 1 {
		return fmt.Errorf("-rounds: got %d, expected at least 1", *rounds)
	}
	// The snapshot reads pgsource_snapshot; the changes are inserts into
	// pgsource_changes.
	plugins, conn, closeDB, err := f.open(ctx, createTables("pgsource_snapshot", "pgsource_changes"))
	if err != nil {
		return err
	}
	defer closeDB()
	if err := fillTable(ctx, conn, "pgsource_snapshot", *records); err != nil {
		return err
	}

	type result struct {
		snapshot, cdc       []host.Stats // one per round
		snapshotErr, cdcErr error
	}
	results := map[string]map[int]*result{}
	for _, p := range plugins {
		results[p.name] = map[int]*result{}
		for _, batch := range *sizes {
			results[p.name][batch] = &result{}
		}
	}
	total, done := *rounds*len(*sizes)*len(plugins)*2, 0
	run := 0
	// Rounds outermost, so that every plugin and setting sees the machine's
	// changing load alike.
	for range *rounds {
		for _, batch := range *sizes {
			for _, p := range plugins {
				r := results[p.name][batch]
				d := dialects[p.dialect]
				for _, phase := range []string{"snapshot", "cdc"} {
					done++
					run++
					fmt.Fprintf(os.Stderr, "\r\033[K[%d/%d] batch %d, %s, %s ...", done, total, batch, p.name, phase)
					name := fmt.Sprintf("bench_%d_%d", os.Getpid(), run)
					cfg := host.Settings{"url": f.url, d.slot: name, d.publication: name}
					if batch > 0 {
						cfg["sdk.batch.size"] = strconv.Itoa(batch)
						cfg["sdk.batch.delay"] = "100ms"
					}
					var st host.Stats
					var err error
					if phase == "snapshot" {
						maps.Copy(cfg, d.snapshot("pgsource_snapshot"))
						maps.Copy(cfg, p.config)
						st, err = drainSource(ctx, p.path, cfg, *records, nil)
						r.snapshot = append(r.snapshot, st)
						r.snapshotErr = cmp.Or(r.snapshotErr, err)
					} else {
						maps.Copy(cfg, d.never("pgsource_changes"))
						maps.Copy(cfg, p.config)
						if _, err := conn.Exec(ctx, `TRUNCATE pgsource_changes`); err != nil {
							return err
						}
						st, err = drainSource(ctx, p.path, cfg, *changes, func() error {
							_, err := conn.Exec(ctx, insertRows("pgsource_changes", 1, *changes))
							return err
						})
						r.cdc = append(r.cdc, st)
						r.cdcErr = cmp.Or(r.cdcErr, err)
					}
					if derr := dropReplication(ctx, conn, name); derr != nil {
						return derr
					}
					if ctx.Err() != nil {
						return ctx.Err()
					}
				}
			}
		}
	}
	fmt.Fprintln(os.Stderr, "\r\033[Kdone")

	var t strings.Builder
	fmt.Fprintf(&t, "Snapshot of %d rows of %s, then %d inserts into a table like it streamed through logical replication; records per second over the plugin protocol, each record acked as it arrives; median of %d rounds.\n\n", *records, rowColumns, *changes, *rounds)
	writeTableHead(&t, "| sdk.batch.size |"+pluginColumns(names(plugins), " %s snapshot rec/s |", " ratio |")+pluginColumns(names(plugins), " %s CDC rec/s |", " ratio |"))
	var series []chart.Series
	for i, p := range plugins {
		series = append(series,
			chart.Series{Label: p.name + " snapshot", Color: chart.Palette[0], Dashed: i == 1},
			chart.Series{Label: p.name + " CDC", Color: chart.Palette[1], Dashed: i == 1})
	}
	labels := make([]string, len(*sizes))
	for bi, batch := range *sizes {
		labels[bi] = batchLabel(batch)
		fmt.Fprintf(&t, "| %s |", labels[bi])
		for ph := range 2 {
			for i, p := range plugins {
				r := results[p.name][batch]
				st, err := median(r.snapshot), r.snapshotErr
				if ph == 1 {
					st, err = median(r.cdc), r.cdcErr
				}
				if err != nil {
					fmt.Fprintf(&t, " failed: %s |", oneLine(err))
					series[2*i+ph].Values = append(series[2*i+ph].Values, math.NaN())
					continue
				}
				fmt.Fprintf(&t, " %.0f |", st.RecordsPerSecond())
				series[2*i+ph].Values = append(series[2*i+ph].Values, st.RecordsPerSecond())
			}
			if len(plugins) == 2 {
				ra, rb := results[plugins[0].name][batch], results[plugins[1].name][batch]
				sa, sb, ea, eb := median(ra.snapshot), median(rb.snapshot), ra.snapshotErr, rb.snapshotErr
				if ph == 1 {
					sa, sb, ea, eb = median(ra.cdc), median(rb.cdc), ra.cdcErr, rb.cdcErr
				}
				if ea == nil && eb == nil {
					fmt.Fprintf(&t, " %.1fx |", sa.RecordsPerSecond()/sb.RecordsPerSecond())
				} else {
					t.WriteString(" |")
				}
			}
		}
		t.WriteString("\n")
	}
	svg := chart.Line("Postgres source: records per second", "sdk.batch.size", "records/s (log scale)", labels, series, true)
	return publish(*out, t.String(), map[string]string{"pgsource.md": t.String(), "pgsource.svg": svg})
}

// median returns the run with the median records per second; a run that
// failed counts as slowest, but a failure is reported anyway.
func median(runs []host.Stats) host.Stats {
	if len(runs) == 0 {
		return host.Stats{}
	}
	return medianBy(runs, host.Stats.RecordsPerSecond)
}

// dropReplication drops a run's replication slot, once its reader is gone,
// and its publication.
func dropReplication(ctx context.Context, conn *pgx.Conn, name string) error {
	for deadline := time.Now().Add(30 * time.Second); ; {
		var left int
		err := conn.QueryRow(ctx, `SELECT count(pg_drop_replication_slot(slot_name)) FILTER (WHERE NOT active) - count(*) FROM pg_replication_slots WHERE slot_name = $1`, name).Scan(&left)
		if err != nil {
			return fmt.Errorf("drop replication slot %s: %w", name, err)
		}
		if left == 0 {
			break
		}
		if time.Now().After(deadline) {
			return errors.New("replication slot " + name + " stayed active after its plugin was killed")
		}
		time.Sleep(50 * time.Millisecond)
	}
	_, err := conn.Exec(ctx, "DROP PUBLICATION IF EXISTS "+pgx.Identifier{name}.Sanitize())
	return err
}
