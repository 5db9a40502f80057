package postgres

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pabloagent/pablo/clock"
	"github.com/pabloagent/pablo/ledger"
)

type leaseState int

const (
	leaseNone     leaseState = iota // never held by this store
	leaseHeld                       // held: writes carry its token
	leaseLost                       // expired or claimed by another owner
	leaseReleased                   // released by this store: the task settled
)

// held is a lease this store holds.
type held struct {
	token     int64
	rootAgent string
	state     leaseState
}

// leaseSet is the store's view of the leases it took.
type leaseSet struct {
	mu sync.Mutex
	m  map[string]*held
}

func (l *leaseSet) get(id string) (held, leaseState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.m[id]
	if h == nil {
		return held{}, leaseNone
	}
	return *h, h.state
}

func (l *leaseSet) set(id string, h held) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[string]*held{}
	}
	l.m[id] = &h
}

func (l *leaseSet) hold(id string, token int64, rootAgent string, _ time.Time) {
	l.set(id, held{token: token, rootAgent: rootAgent, state: leaseHeld})
}

func (l *leaseSet) lose(id string, token int64) { l.set(id, held{token: token, state: leaseLost}) }

func (l *leaseSet) release(id string, token int64) {
	l.set(id, held{token: token, state: leaseReleased})
}

// heldTasks lists the tasks whose lease is held, with their tokens.
func (l *leaseSet) heldTasks() ([]string, []int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var ids []string
	var toks []int64
	for id, h := range l.m {
		if h.state == leaseHeld {
			ids = append(ids, id)
			toks = append(toks, h.token)
		}
	}
	return ids, toks
}

// renewer renews the store's leases every LeaseTTL/3 on the store's clock.
// Its timer callbacks run one at a time; stop cancels the next one and
// joins the one running.
type renewer struct {
	mu      sync.Mutex
	stopped bool
	timer   clock.Timer
	running sync.WaitGroup
	ctx     context.Context
	cancel  context.CancelFunc
}

func (r *renewer) start(s *Store) {
	r.ctx, r.cancel = context.WithCancel(context.Background())
	r.schedule(s)
}

func (r *renewer) schedule(s *Store) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return
	}
	r.running.Add(1)
	r.timer = s.clock.AfterFunc(s.ttl/3, func() {
		defer r.running.Done()
		r.mu.Lock()
		stopped := r.stopped
		r.mu.Unlock()
		if stopped {
			return
		}
		s.renewAll(r.ctx)
		r.schedule(s)
	})
}

func (r *renewer) stop() {
	r.mu.Lock()
	if r.cancel == nil {
		r.mu.Unlock()
		return
	}
	r.stopped = true
	if r.timer != nil && r.timer.Stop() {
		r.running.Done() // its callback will never run
	}
	r.cancel()
	r.mu.Unlock()
	r.running.Wait()
}

const sqlRenew = `UPDATE pablo_leases l SET expires_at = $3
	FROM unnest($1::text[], $2::bigint[]) AS h(task_id, token)
	WHERE l.task_id = h.task_id AND l.token = h.token AND l.owner = $4
	  AND NOT l.released AND l.expires_at > $5
	RETURNING l.task_id`

// renewAll extends every lease the store holds by LeaseTTL from now; a
// lease that expired before its renewal, or that another owner claimed, is
// lost, and later writes of its task are refused.
func (s *Store) renewAll(ctx context.Context) error {
	ids, toks := s.leases.heldTasks()
	if len(ids) == 0 {
		return nil
	}
	now := s.clock.Now()
	rows, err := s.pool.Query(ctx, sqlRenew, ids, toks, now.Add(s.ttl), s.owner, now)
	if err != nil {
		return err
	}
	renewed, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	ok := make(map[string]bool, len(renewed))
	for _, id := range renewed {
		ok[id] = true
	}
	for i, id := range ids {
		if !ok[id] {
			s.leases.lose(id, toks[i])
		}
	}
	return nil
}

// Renew renews every lease this store holds now, as the background renewer
// does each LeaseTTL/3.
func (s *Store) Renew(ctx context.Context) error {
	if s.readOnly || s.isClosed() {
		return ledger.ErrClosed
	}
	if err := s.renewAll(ctx); err != nil {
		return &ledger.StoreError{Op: "renew leases", Err: err}
	}
	return nil
}

// releaseAll releases every lease the store holds: at Close, every task the
// store wrote is over for this process.
func (s *Store) releaseAll(ctx context.Context) error {
	ids, toks := s.leases.heldTasks()
	if len(ids) == 0 {
		return nil
	}
	_, err := s.pool.Exec(ctx, sqlRelease, ids, toks, s.owner)
	return err
}

// Lease implements [ledger.LeaseStore]: the task's lease as the database
// holds it, Live by this store's clock.
func (s *Store) Lease(ctx context.Context, taskID string) (ledger.Lease, error) {
	if s.isClosed() {
		return ledger.Lease{}, ledger.ErrClosed
	}
	var l ledger.Lease
	var tok int64
	err := s.pool.QueryRow(ctx, `SELECT task_id, owner, token, expires_at, released FROM pablo_leases WHERE task_id = $1`, taskID).
		Scan(&l.TaskID, &l.Owner, &tok, &l.Expires, &l.Released)
	if errors.Is(err, pgx.ErrNoRows) {
		return ledger.Lease{}, ledger.NotFoundError("lease of task", taskID)
	}
	if err != nil {
		return ledger.Lease{}, readError(err)
	}
	l.Token = uint64(tok)
	l.Expires = l.Expires.UTC()
	l.Live = !l.Released && s.clock.Now().Before(l.Expires)
	return l, nil
}

// Claim takes over the lease of a task whose lease has expired or was
// released, with a new fencing token, so that this store may write to the
// task and its previous owner never again can. A live lease is refused
// with a [*ledger.LeaseError] matching ledger.ErrLeaseLive. The claimed
// lease is renewed like any other this store holds.
func (s *Store) Claim(ctx context.Context, taskID string) (ledger.Lease, error) {
	if s.readOnly {
		return ledger.Lease{}, &ledger.StoreError{Op: "claim", Err: ledger.ErrReadOnly}
	}
	if s.isClosed() {
		return ledger.Lease{}, ledger.ErrClosed
	}
	now := s.clock.Now()
	var tok int64
	err := s.pool.QueryRow(ctx, `UPDATE pablo_leases
		SET owner = $2, token = nextval('pablo_fencing_tokens'), expires_at = $3, released = false
		WHERE task_id = $1 AND (released OR expires_at <= $4)
		RETURNING token`, taskID, s.owner, now.Add(s.ttl), now).Scan(&tok)
	if errors.Is(err, pgx.ErrNoRows) {
		l, lerr := s.Lease(ctx, taskID)
		if lerr != nil {
			return ledger.Lease{}, lerr
		}
		return ledger.Lease{}, &ledger.LeaseError{Lease: l}
	}
	if err != nil {
		return ledger.Lease{}, &ledger.StoreError{Op: "claim", Err: err}
	}
	var root string
	if recs, err := s.Records(ctx, taskID); err == nil && len(recs) > 0 && recs[0].Task != nil {
		root = recs[0].Task.RootAgentID
	}
	s.leases.hold(taskID, tok, root, now.Add(s.ttl))
	return ledger.Lease{TaskID: taskID, Owner: s.owner, Token: uint64(tok), Expires: now.Add(s.ttl).UTC(), Live: true}, nil
}
