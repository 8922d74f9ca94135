// Command ferretdb runs an embedded FerretDB (MongoDB wire protocol over SQLite)
// for local development and tests, where no real MongoDB can be installed.
//
// It imports FerretDB's public embeddable package instead of building FerretDB's
// own cmd, whose build/version/version.txt is only generated at release time.
//
// Writes run one at a time and a unique index violation on update answers MongoDB's DuplicateKey error: see
// patches/proxyless.patch (build.sh).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/FerretDB/FerretDB/ferretdb"
)

// Garbage collection defaults, unless GOGC / GOMEMLIMIT say otherwise. Reads allocate a short-lived copy of every
// document they touch, so with Go's default (GOGC=100) collection took about a quarter of the server's CPU under
// load; at 400 it collects a quarter as often, and the soft limit makes it collect sooner past 1 GiB of heap.
const (
	gcPercent   = 400
	memoryLimit = 1 << 30
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "ferretdb:", err)
		os.Exit(1)
	}
}

func run() error {
	listenAddr := flag.String("listen-addr", "", "TCP address to listen on, e.g. 127.0.0.1:27017; port 0 picks a free one (required)")
	dataDir := flag.String("data-dir", ".cache/mongo/data", "SQLite data directory (created if missing)")
	logLevel := flag.String("log-level", "warn", "log level: debug, info, warn or error")
	stdinWatch := flag.Bool("exit-on-stdin-close", false, "exit when stdin reaches EOF (parent died), for supervised use")
	flag.Parse()

	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(memoryLimit)
	}

	if *listenAddr == "" || flag.NArg() > 0 {
		flag.Usage()
		return errors.New("--listen-addr is required and no positional arguments are accepted")
	}

	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("invalid --log-level %q: %w", *logLevel, err)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	dir, err := filepath.Abs(*dataDir)
	if err != nil {
		return err
	}
	if err = os.MkdirAll(dir, 0o755); err != nil {
		return err
	}

	// FerretDB wants a "file:" URI naming an existing directory, ending with "/".
	// It turns on WAL; synchronous(normal) then skips an fsync per commit (safe against
	// corruption; only a power loss may drop the last commits), several times faster writes.
	// temp_store(memory) keeps the statement journal of each insert in memory (FerretDB
	// inserts a document per statement, and SQLite spilled that journal to a temporary file,
	// opened and closed per transaction); mmap_size reads the database file through a mapping
	// instead of a pread per page (docs/adr/0050-write-path-speed.md, fifth pass).
	sqliteURL := (&url.URL{
		Scheme: "file",
		Path:   strings.TrimSuffix(filepath.ToSlash(dir), "/") + "/",
		RawQuery: url.Values{"_pragma": {
			"synchronous(normal)", "temp_store(memory)", "mmap_size(268435456)",
		}}.Encode(),
	}).String()

	// The embeddable package never starts the telemetry reporter and locks telemetry off.
	f, err := ferretdb.New(&ferretdb.Config{
		Listener:  ferretdb.ListenerConfig{TCP: *listenAddr},
		Logger:    logger,
		Handler:   "sqlite",
		SQLiteURL: sqliteURL,
	})
	if err != nil {
		return err
	}

	uri, err := url.Parse(f.MongoDBURI()) // New has bound the port
	if err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	// A supervising parent holds our stdin open; EOF means it is gone, even after SIGKILL.
	if *stdinWatch {
		go func() {
			_, _ = io.Copy(io.Discard, os.Stdin)
			logger.Warn("stdin closed, shutting down")
			stop()
		}()
	}

	// A second signal while shutting down exits at once.
	go func() {
		<-ctx.Done()
		stop()
		again := make(chan os.Signal, 1)
		signal.Notify(again, syscall.SIGTERM, syscall.SIGINT)
		<-again
		os.Exit(1)
	}()

	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = f.Run(ctx)
	}()

	// The one stdout line: supervisors wait for it, and learn the port when it was 0.
	fmt.Printf("listening on %s\n", uri.Host)
	logger.Info("ferretdb serving", slog.String("addr", uri.Host), slog.String("data", dir))
	<-done // FerretDB has closed its connections and the SQLite databases

	return nil
}
