package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pabloagent/pablo/clock"
	"github.com/pabloagent/pablo/ledger"
)

// ErrAuth: the server refused the store's credentials (a wrong user or
// password, or no password where one is needed). Also matches
// ledger.ErrStore.
var ErrAuth = errors.New("ledger/postgres: the server refused the credentials")

// Clock is the clock that lease expiry and renewal read: an alias of the
// one clock interface of Pablo's time-based rules, so a test clock of
// children or acp serves here too.
type Clock = clock.Clock

// Options configure [Open].
type Options struct {
	// URL names the database: postgres://[user@]host[:port]/database[?options]
	// (a socket directory goes in the host query option). It must not carry a
	// password (see [CheckURL]).
	URL string
	// Password, when set, is the password to connect with, from a
	// credential for the ledger.store consumer. Empty means libpq's own
	// sources: PGPASSWORD, then PGPASSFILE (or ~/.pgpass).
	Password string
	// ReadOnly opens the store to read it: the schema must exist at this
	// code's version (nothing is created or migrated), every session is
	// read-only in the server, no lease is taken and Append fails with
	// ledger.ErrReadOnly.
	ReadOnly bool
	// Owner identifies this process in the leases it takes. Empty means
	// "HOSTNAME/PID/RANDOM". Two open stores never share one.
	Owner string
	// LeaseTTL is how long a lease holds without renewal; the store renews
	// every lease it holds each LeaseTTL/3. Zero means 30 seconds. A task
	// whose owner stopped renewing it is recoverable from another host one
	// LeaseTTL after the last renewal at the latest.
	LeaseTTL time.Duration
	// Clock reads the time for leases. Nil means the system clock.
	Clock Clock
	// MaxBatch caps how many Append calls share one transaction. Zero
	// means 1024.
	MaxBatch int
	// MaxConns caps the connection pool. Zero means 4.
	MaxConns int32
}

// Store is a [ledger.Store] on a PostgreSQL database that any number of
// processes on any number of hosts share. It is generic over records: a
// record is kept as the JSON of its [ledger.Record], so a record kind
// added to the ledger needs no change here.
//
// Concurrent appends are grouped: one committer goroutine, owned by the
// store and joined by Close, writes every queued Append (of any task) in one
// transaction, one commit and so one WAL flush, then acknowledges each.
//
// Each task is owned through a lease ([ledger.Lease]): the store takes
// it with the task's first record, renews it in the background, and
// releases it with the root agent's terminal record, or at Close. Every
// write carries the lease's fencing token, and the transaction inserts
// only the records whose task's lease row (locked FOR UPDATE) still has
// that token, this owner, and an expiry after now: a process that lost
// its lease, because it was paused past the expiry and another process
// claimed the task ([Store.Claim]), cannot write to it any more, and its
// Append fails with an error matching ledger.ErrLeaseLost.
type Store struct {
	pool     *pgxpool.Pool
	readOnly bool
	owner    string
	ttl      time.Duration
	clock    Clock
	maxBatch int

	mu     sync.RWMutex // guards closed against sends on reqs
	closed bool
	reqs   chan *appendReq
	done   chan struct{} // closed when the committer has exited

	leases leaseSet
	renew  renewer

	commits atomic.Uint64
}

// Open connects to the database named by opts.URL, creates or migrates the
// schema (unless ReadOnly) and starts the committer and the lease renewer.
func Open(ctx context.Context, opts Options) (*Store, error) {
	if err := CheckURL(opts.URL); err != nil {
		return nil, err
	}
	if opts.LeaseTTL < 0 || opts.MaxBatch < 0 || opts.MaxConns < 0 {
		return nil, &ledger.InvalidError{Field: "postgres.Options", Reason: "LeaseTTL, MaxBatch and MaxConns must not be negative"}
	}
	if opts.LeaseTTL == 0 {
		opts.LeaseTTL = 30 * time.Second
	}
	if opts.LeaseTTL < 3*time.Millisecond {
		return nil, &ledger.InvalidError{Field: "postgres.Options.LeaseTTL", Reason: "must be at least 3ms"}
	}
	if opts.MaxBatch == 0 {
		opts.MaxBatch = 1024
	}
	if opts.MaxConns == 0 {
		opts.MaxConns = 4
	}
	if opts.Clock == nil {
		opts.Clock = clock.System{}
	}
	if opts.Owner == "" {
		opts.Owner = defaultOwner()
	}
	cfg, err := pgxpool.ParseConfig(opts.URL)
	if err != nil {
		return nil, &URLError{Reason: "pgx does not accept it: " + scrub(err.Error(), opts.URL)}
	}
	if opts.Password != "" {
		cfg.ConnConfig.Password = opts.Password
	}
	cfg.MaxConns = opts.MaxConns
	cfg.MinConns = 0
	if cfg.ConnConfig.RuntimeParams == nil {
		cfg.ConnConfig.RuntimeParams = map[string]string{}
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = "pablo-ledger"
	if opts.ReadOnly {
		// The server itself refuses any write of a read-only open.
		cfg.ConnConfig.RuntimeParams["default_transaction_read_only"] = "on"
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, connectError("connect", err, opts)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, connectError("connect", err, opts)
	}
	if opts.ReadOnly {
		err = checkSchema(ctx, pool)
	} else {
		err = migrate(ctx, pool)
	}
	if err != nil {
		pool.Close()
		var se *SchemaError
		if errors.As(err, &se) {
			return nil, se
		}
		return nil, connectError("initialize the schema", err, opts)
	}
	s := &Store{pool: pool, readOnly: opts.ReadOnly, owner: opts.Owner, ttl: opts.LeaseTTL, clock: opts.Clock,
		maxBatch: opts.MaxBatch, reqs: make(chan *appendReq, opts.MaxBatch), done: make(chan struct{})}
	if opts.ReadOnly {
		close(s.done)
		return s, nil
	}
	go s.commitLoop()
	s.renew.start(s)
	return s, nil
}

// connectError wraps a driver failure as a ledger.StoreError whose text
// holds neither the URL nor the password.
func connectError(op string, err error, opts Options) error {
	var pe *pgconn.PgError
	msg := scrub(err.Error(), opts.URL)
	if opts.Password != "" {
		msg = strings.ReplaceAll(msg, opts.Password, "<password>")
	}
	if p := os.Getenv("PGPASSWORD"); p != "" {
		msg = strings.ReplaceAll(msg, p, "<password>")
	}
	var cause error = errors.New(msg)
	if errors.As(err, &pe) && (pe.Code == "28P01" || pe.Code == "28000") {
		cause = fmt.Errorf("%w: %s (check the user in the URL and the password in PGPASSFILE, PGPASSWORD or the ledger.store credential)", ErrAuth, msg)
	}
	return &ledger.StoreError{Op: op, Err: cause}
}

func defaultOwner() string {
	host, _ := os.Hostname()
	b := make([]byte, 4)
	rand.Read(b)
	return fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(b))
}

// Owner is the identity this store takes leases under.
func (s *Store) Owner() string { return s.owner }

// Commits reports how many transactions the committer has committed since
// the store was opened: barriers, fewer when concurrent appends (of one
// task or several) shared one.
func (s *Store) Commits() uint64 { return s.commits.Load() }

// Close stops accepting appends, commits every queued one, joins the
// committer and the lease renewer, releases every lease this store still
// holds and closes the connections. Later calls return nil.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	if !s.readOnly {
		close(s.reqs)
	}
	s.mu.Unlock()
	<-s.done
	s.renew.stop()
	var err error
	if !s.readOnly {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = s.releaseAll(ctx)
		cancel()
	}
	s.pool.Close()
	if err != nil {
		return &ledger.StoreError{Op: "close (release leases)", Err: err}
	}
	return nil
}

func (s *Store) isClosed() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.closed
}
