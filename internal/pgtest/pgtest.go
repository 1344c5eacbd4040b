// Package pgtest runs a throwaway PostgreSQL server for tests, from the
// machine's own server binaries: PG_BIN if set, else the newest
// /usr/lib/postgresql/*/bin. It listens on 127.0.0.1 only, on a free port,
// with its data in a temporary directory that Stop removes. As root it runs
// the server as the postgres user, since initdb refuses to run as root.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Server is a running PostgreSQL server.
type Server struct {
	URL string // superuser connection to the postgres database

	bin, dir string
	port     int
	settings []string // extra -c settings
	asUser   string   // run the server's commands as this user; empty: as ourselves
}

// Start initializes a database cluster with wal_level=logical and starts
// the server.
func Start() (*Server, error) { return StartWith() }

// StartWith is [Start] with extra server settings, each name=value, which
// override the defaults: StartWith("wal_level=replica") starts a server
// that cannot feed logical replication.
func StartWith(settings ...string) (*Server, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "connkit-pg-")
	if err != nil {
		return nil, err
	}
	s := &Server{bin: bin, dir: dir, settings: settings}
	if os.Geteuid() == 0 {
		s.asUser = "postgres"
		if err := chown(dir, s.asUser); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	if s.port, err = freePort(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s.URL = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.port)
	if err := s.run("initdb", "-D", s.data(), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := s.start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

func (s *Server) data() string { return filepath.Join(s.dir, "data") }

func (s *Server) start() error {
	opts := fmt.Sprintf("-p %d -h 127.0.0.1 -k %s -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c wal_level=logical -c max_wal_senders=10 -c max_replication_slots=10", s.port, s.dir)
	for _, kv := range s.settings {
		opts += " -c " + kv
	}
	if err := s.run("pg_ctl", "-D", s.data(), "-o", opts, "-l", filepath.Join(s.dir, "log"), "-w", "-t", "60", "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(s.dir, "log"))
		return fmt.Errorf("%w\nserver log:\n%s", err, log)
	}
	return nil
}

// Restart stops the server, dropping every connection, and starts it again
// on the same port. Committed data survives (the server runs without fsync,
// so only a clean shutdown keeps it).
func (s *Server) Restart() error {
	if err := s.run("pg_ctl", "-D", s.data(), "-m", "fast", "-w", "stop"); err != nil {
		return err
	}
	return s.start()
}

// Stop stops the server and removes its data.
func (s *Server) Stop() error {
	err := s.run("pg_ctl", "-D", s.data(), "-m", "immediate", "-w", "stop")
	return errors.Join(err, os.RemoveAll(s.dir))
}

// CreateDatabase creates a database and returns the URL to connect to it,
// so that tests sharing a server do not see each other's tables.
func (s *Server) CreateDatabase(ctx context.Context, name string) (string, error) {
	conn, err := pgx.Connect(ctx, s.URL)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", err
	}
	return strings.Replace(s.URL, "/postgres?", "/"+name+"?", 1), nil
}

func (s *Server) run(name string, args ...string) error {
	cmd := exec.Command(filepath.Join(s.bin, name), args...)
	if s.asUser != "" {
		cmd = exec.Command("runuser", append([]string{"-u", s.asUser, "--", filepath.Join(s.bin, name)}, args...)...)
	}
	cmd.Dir = s.dir
	// A process group of its own, so that a Ctrl-C in the terminal cannot
	// kill pg_ctl after it launched the server and before Start returns the
	// Server that stops it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("pgtest: %s %s: %w\n%s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

func binDir() (string, error) {
	if dir := os.Getenv("PG_BIN"); dir != "" {
		return dir, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int { return version(a) - version(b) })
	if len(dirs) == 0 {
		return "", errors.New("pgtest: no PostgreSQL server binaries: set PG_BIN or install them under /usr/lib/postgresql")
	}
	return dirs[len(dirs)-1], nil
}

func version(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}

func chown(dir, name string) error {
	u, err := user.Lookup(name)
	if err != nil {
		return fmt.Errorf("pgtest: running as root needs the %s user: %w", name, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return os.Chown(dir, uid, gid)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// WaitReady waits until the server accepts connections, for after Restart.
func (s *Server) WaitReady(ctx context.Context) error {
	for {
		conn, err := pgx.Connect(ctx, s.URL)
		if err == nil {
			return conn.Close(ctx)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("pgtest: server not ready: %w (last error: %v)", ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Main is a test package's TestMain: it starts a server into *s for the
// package's tests, runs them, stops the server and exits with their
// status.
func Main(m *testing.M, s **Server) {
	os.Exit(func() int {
		var err error
		if *s, err = Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer (*s).Stop()
		return m.Run()
	}())
}
