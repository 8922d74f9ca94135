// Command ferretdb runs an embedded FerretDB (MongoDB wire protocol over SQLite)
// for local development and tests, where no real MongoDB can be installed.
//
// It imports FerretDB's public embeddable package instead of building FerretDB's
// own cmd, whose build/version/version.txt is only generated at release time.
//
// FerretDB v1 runs findAndModify and update as read-then-write without a lock, so
// concurrent `$inc`s on one document lose updates (id counters would repeat). To keep
// writes atomic, clients talk to a small wire proxy in this program that forwards
// every message to FerretDB on a private loopback port and lets only one write
// command through at a time; reads stay concurrent.
package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/FerretDB/FerretDB/ferretdb"
	"go.mongodb.org/mongo-driver/bson"
)

// MongoDB wire protocol constants.
const (
	opMsg             = 2013
	headerLen         = 16
	maxMessageLen     = 48_000_000
	flagChecksum      = 1 << 0
	flagMoreToCome    = 1 << 1
	sectionKindBody   = 0
	sectionKindSeq    = 1
	duplicateKeyCode  = 11000
	internalErrorCode = 1
)

const acceptRetryDelay = 100 * time.Millisecond

// Garbage collection defaults, unless GOGC / GOMEMLIMIT say otherwise. Reads allocate a short-lived copy of every
// document they touch, so with Go's default (GOGC=100) collection took about a quarter of the server's CPU under
// load; at 400 it collects a quarter as often, and the soft limit makes it collect sooner past 1 GiB of heap.
const (
	gcPercent   = 400
	memoryLimit = 1 << 30
)

// writeCommands are serialized by the proxy (lower-cased command names).
var writeCommands = map[string]bool{
	"insert": true, "update": true, "delete": true, "findandmodify": true,
	"create": true, "createindexes": true, "drop": true, "dropindexes": true,
	"dropdatabase": true, "renamecollection": true, "collmod": true,
}

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
	sqliteURL := (&url.URL{
		Scheme:   "file",
		Path:     strings.TrimSuffix(filepath.ToSlash(dir), "/") + "/",
		RawQuery: url.Values{"_pragma": {"synchronous(normal)"}}.Encode(),
	}).String()

	// The embeddable package never starts the telemetry reporter and locks telemetry off.
	f, err := ferretdb.New(&ferretdb.Config{
		Listener:  ferretdb.ListenerConfig{TCP: "127.0.0.1:0"}, // private; clients use the proxy
		Logger:    logger,
		Handler:   "sqlite",
		SQLiteURL: sqliteURL,
	})
	if err != nil {
		return err
	}

	backendURI, err := url.Parse(f.MongoDBURI()) // the port is known once New has bound it
	if err != nil {
		return err
	}

	ln, err := net.Listen("tcp", *listenAddr)
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

	p := &proxy{backend: backendURI.Host, logger: logger, conns: map[net.Conn]struct{}{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = f.Run(ctx)
	}()

	// The one stdout line: supervisors wait for it, and learn the port when it was 0.
	fmt.Printf("listening on %s\n", ln.Addr())
	logger.Info("ferretdb serving", slog.String("addr", ln.Addr().String()), slog.String("data", dir))
	p.serve(ctx, ln)
	<-done // FerretDB has closed its connections and the SQLite databases

	return nil
}

// proxy forwards MongoDB wire messages to FerretDB, one write command at a time.
type proxy struct {
	backend string
	logger  *slog.Logger
	writeMu sync.Mutex

	connsMu sync.Mutex
	conns   map[net.Conn]struct{}
}

// serve accepts clients until ctx is canceled, then closes every open connection.
func (p *proxy) serve(ctx context.Context, ln net.Listener) {
	var wg sync.WaitGroup
	go func() {
		<-ctx.Done()
		_ = ln.Close()
		p.connsMu.Lock()
		for c := range p.conns {
			_ = c.Close()
		}
		p.connsMu.Unlock()
	}()

	for {
		client, err := ln.Accept()
		if err != nil {
			if ctx.Err() == nil {
				p.logger.Warn("accept failed", slog.Any("error", err))
				time.Sleep(acceptRetryDelay) // e.g. out of file descriptors: don't spin
				continue
			}
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.handle(ctx, client)
		}()
	}
	wg.Wait()
}

// track registers open connections so that shutdown can close them.
func (p *proxy) track(c net.Conn, open bool) {
	p.connsMu.Lock()
	defer p.connsMu.Unlock()
	if open {
		p.conns[c] = struct{}{}
	} else {
		delete(p.conns, c)
	}
}

// handle relays one client connection; FerretDB answers every request with exactly one reply.
func (p *proxy) handle(ctx context.Context, client net.Conn) {
	defer client.Close()
	backend, err := net.Dial("tcp", p.backend)
	if err != nil {
		p.logger.Warn("backend dial failed", slog.Any("error", err))
		return
	}
	defer backend.Close()

	p.track(client, true)
	p.track(backend, true)
	defer p.track(client, false)
	defer p.track(backend, false)
	if ctx.Err() != nil {
		return
	}

	fromClient := bufio.NewReader(client)
	fromBackend := bufio.NewReader(backend)
	for {
		req, err := readMessage(fromClient)
		if err != nil {
			return // client closed the connection (or sent garbage)
		}
		flags, body := opMsgBody(req)
		command := strings.ToLower(commandName(body))
		if command == "endsessions" && flags&flagMoreToCome != 0 {
			continue // drivers send it on close; FerretDB lacks it and would log a warning
		}
		isWrite := writeCommands[command]

		if isWrite {
			p.writeMu.Lock()
		}
		reply, err := roundTrip(backend, fromBackend, req)
		if isWrite {
			p.writeMu.Unlock()
		}
		if err != nil {
			return
		}

		if flags&flagMoreToCome != 0 {
			continue // unacknowledged write: the client expects no reply
		}
		if isWrite {
			reply = fixDuplicateKeyError(reply, body)
		}
		if _, err = client.Write(reply); err != nil {
			return
		}
	}
}

func roundTrip(backend net.Conn, fromBackend *bufio.Reader, req []byte) ([]byte, error) {
	if _, err := backend.Write(req); err != nil {
		return nil, err
	}
	return readMessage(fromBackend)
}

// readMessage reads one length-prefixed wire message.
func readMessage(r io.Reader) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	n := int(int32(binary.LittleEndian.Uint32(size[:])))
	if n < headerLen || n > maxMessageLen {
		return nil, fmt.Errorf("invalid message length %d", n)
	}
	msg := make([]byte, n)
	copy(msg, size[:])
	if _, err := io.ReadFull(r, msg[4:]); err != nil {
		return nil, err
	}
	return msg, nil
}

// opMsgBody returns an OP_MSG's flag bits and its body document (nil for other messages).
func opMsgBody(msg []byte) (uint32, bson.Raw) {
	if len(msg) < headerLen+5 || binary.LittleEndian.Uint32(msg[12:16]) != opMsg {
		return 0, nil
	}
	flags := binary.LittleEndian.Uint32(msg[16:20])
	end := len(msg)
	if flags&flagChecksum != 0 {
		end -= 4
	}
	for pos := headerLen + 4; pos+5 <= end; {
		kind := msg[pos]
		size := int(int32(binary.LittleEndian.Uint32(msg[pos+1 : pos+5])))
		if size < 5 || pos+1+size > end {
			return flags, nil
		}
		switch kind {
		case sectionKindBody:
			return flags, bson.Raw(msg[pos+1 : pos+1+size])
		case sectionKindSeq:
			pos += 1 + size
		default:
			return flags, nil
		}
	}
	return flags, nil
}

// commandName returns the first key of a command document ("" if there is none).
func commandName(body bson.Raw) string {
	if body == nil {
		return ""
	}
	elem, err := body.IndexErr(0)
	if err != nil {
		return ""
	}
	return elem.Key()
}

// fixDuplicateKeyError turns FerretDB's InternalError for a unique index violation on update
// (SQLite "UNIQUE constraint failed") into MongoDB's DuplicateKey error, code 11000.
func fixDuplicateKeyError(reply []byte, req bson.Raw) []byte {
	flags, body := opMsgBody(reply)
	if body == nil || flags&flagChecksum != 0 {
		return reply
	}
	code, ok := body.Lookup("code").AsInt64OK()
	errmsg, _ := body.Lookup("errmsg").StringValueOK()
	if !ok || code != internalErrorCode || !strings.Contains(errmsg, "UNIQUE constraint failed") {
		return reply
	}

	var doc bson.D
	if err := bson.Unmarshal(body, &doc); err != nil {
		return reply
	}
	db, _ := req.Lookup("$db").StringValueOK()
	coll, _ := req.Index(0).Value().StringValueOK()
	for i := range doc {
		switch doc[i].Key {
		case "code":
			doc[i].Value = int32(duplicateKeyCode)
		case "codeName":
			doc[i].Value = "DuplicateKey"
		case "errmsg":
			doc[i].Value = fmt.Sprintf("E11000 duplicate key error collection: %s.%s", db, coll)
		}
	}
	newBody, err := bson.Marshal(doc)
	if err != nil {
		return reply
	}

	out := make([]byte, 0, headerLen+5+len(newBody))
	out = append(out, reply[:headerLen+4]...) // header and flag bits
	out = append(out, sectionKindBody)
	out = append(out, newBody...)
	binary.LittleEndian.PutUint32(out[0:4], uint32(len(out)))
	return out
}
