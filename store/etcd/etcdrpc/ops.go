package etcdrpc

import (
	"context"
	"fmt"
)

type opType int

const (
	tRange opType = iota + 1
	tPut
	tDeleteRange
	tTxn
)

// Op is one operation: a get, a put, a delete or a transaction, alone or in a transaction.
type Op struct {
	t   opType
	key []byte
	end []byte

	// a get's
	limit        int64
	rev          int64
	sort         *sortOption
	keysOnly     bool
	countOnly    bool
	serializable bool

	// a put's
	val     []byte
	leaseID LeaseID

	// a watch's
	filterPut, filterDelete bool
	createdNotify           bool

	// a transaction's
	cmps             []Cmp
	thenOps, elseOps []Op
}

// OpOption sets an option of an operation.
type OpOption func(*Op)

// OpGet is a get of key.
func OpGet(key string, opts ...OpOption) Op {
	op := Op{t: tRange, key: []byte(key)}
	op.apply(opts)
	return op
}

// OpPut is a put of val at key.
func OpPut(key, val string, opts ...OpOption) Op {
	op := Op{t: tPut, key: []byte(key), val: []byte(val)}
	op.apply(opts)
	return op
}

// OpDelete is a delete of key.
func OpDelete(key string, opts ...OpOption) Op {
	op := Op{t: tDeleteRange, key: []byte(key)}
	op.apply(opts)
	return op
}

// OpTxn is a transaction nested in another.
func OpTxn(cmps []Cmp, thenOps, elseOps []Op) Op {
	return Op{t: tTxn, cmps: cmps, thenOps: thenOps, elseOps: elseOps}
}

// ValueBytes is a put's value.
func (op Op) ValueBytes() []byte { return op.val }

func (op *Op) apply(opts []OpOption) {
	for _, o := range opts {
		o(op)
	}
}

// WithPrefix makes the operation cover every key that begins with its key.
func WithPrefix() OpOption {
	return func(op *Op) {
		if len(op.key) == 0 {
			op.key, op.end = []byte{0}, []byte{0}
			return
		}
		op.end = prefixEnd(op.key)
	}
}

// WithRange makes the operation cover the keys from its key to end, end excluded.
func WithRange(end string) OpOption { return func(op *Op) { op.end = []byte(end) } }

// WithLimit bounds the keys a get returns.
func WithLimit(n int64) OpOption { return func(op *Op) { op.limit = n } }

// WithRev reads at revision rev, or watches from it.
func WithRev(rev int64) OpOption { return func(op *Op) { op.rev = rev } }

// WithKeysOnly returns the keys without their values.
func WithKeysOnly() OpOption { return func(op *Op) { op.keysOnly = true } }

// WithCountOnly returns the number of keys only.
func WithCountOnly() OpOption { return func(op *Op) { op.countOnly = true } }

// WithSerializable reads from the member answering, without a round through the leader.
func WithSerializable() OpOption { return func(op *Op) { op.serializable = true } }

// WithLease attaches a put's key to a lease.
func WithLease(id LeaseID) OpOption { return func(op *Op) { op.leaseID = id } }

// WithFilterPut makes a watch leave out puts.
func WithFilterPut() OpOption { return func(op *Op) { op.filterPut = true } }

// WithFilterDelete makes a watch leave out deletes.
func WithFilterDelete() OpOption { return func(op *Op) { op.filterDelete = true } }

// WithCreatedNotify makes a watch deliver etcd's notice that it is in place.
func WithCreatedNotify() OpOption { return func(op *Op) { op.createdNotify = true } }

// SortTarget is what a get sorts by.
type SortTarget int

// SortOrder is the order a get sorts in.
type SortOrder int

// The sorts a get takes.
const (
	SortByKey SortTarget = iota
	SortByVersion
	SortByCreateRevision
	SortByModRevision
	SortByValue
)

const (
	SortNone SortOrder = iota
	SortAscend
	SortDescend
)

type sortOption struct {
	target SortTarget
	order  SortOrder
}

// WithSort sorts a get's keys.
func WithSort(target SortTarget, order SortOrder) OpOption {
	return func(op *Op) {
		if target == SortByKey && order == SortAscend {
			// etcd returns keys in that order anyway, and a sort it is asked for reads the
			// whole range before it applies the limit: as clientv3, ask for none.
			order = SortNone
		}
		op.sort = &sortOption{target, order}
	}
}

// WithLastKey gets the last key with the operation's key as prefix.
func WithLastKey() []OpOption {
	return []OpOption{WithPrefix(), WithSort(SortByKey, SortDescend), WithLimit(1)}
}

// GetPrefixRangeEnd is the end of the range of the keys with prefix p.
func GetPrefixRangeEnd(p string) string { return string(prefixEnd([]byte(p))) }

// prefixEnd is the first key after every key that begins with p: p with its last byte that
// is not 0xff incremented and what follows dropped; "\x00" (to the end) when there is none.
func prefixEnd(p []byte) []byte {
	end := make([]byte, len(p))
	copy(end, p)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return []byte{0}
}

type requireLeaderKey struct{}

// WithRequireLeader marks ctx's requests to be refused by a member that has no leader, and its
// watches to end when their member loses it.
func WithRequireLeader(ctx context.Context) context.Context {
	return context.WithValue(ctx, requireLeaderKey{}, true)
}

func requiresLeader(ctx context.Context) bool {
	v, _ := ctx.Value(requireLeaderKey{}).(bool)
	return v
}

// Cmp is a comparison a transaction makes of a key.
type Cmp struct {
	key    []byte
	target string // CREATE, MOD, VERSION, VALUE
	result string // EQUAL, GREATER, LESS, NOT_EQUAL
	num    int64
	value  []byte
}

// CreateRevision compares key's create revision (0: it does not exist).
func CreateRevision(key string) Cmp { return Cmp{key: []byte(key), target: "CREATE"} }

// ModRevision compares key's last modification's revision.
func ModRevision(key string) Cmp { return Cmp{key: []byte(key), target: "MOD"} }

// Version compares key's version (0: it does not exist).
func Version(key string) Cmp { return Cmp{key: []byte(key), target: "VERSION"} }

// Value compares key's value.
func Value(key string) Cmp { return Cmp{key: []byte(key), target: "VALUE"} }

// Compare is cmp with its relation ("=", "!=", ">" or "<") to v: an integer for a revision or
// a version, a string for a value.
func Compare(cmp Cmp, result string, v any) Cmp {
	switch result {
	case "=":
		cmp.result = "EQUAL"
	case "!=":
		cmp.result = "NOT_EQUAL"
	case ">":
		cmp.result = "GREATER"
	case "<":
		cmp.result = "LESS"
	default:
		panic(fmt.Sprintf("etcdrpc: unknown comparison %q", result))
	}
	switch x := v.(type) {
	case int64:
		cmp.num = x
	case int:
		cmp.num = int64(x)
	case string:
		cmp.value = []byte(x)
	default:
		panic(fmt.Sprintf("etcdrpc: a comparison with %T", v))
	}
	// As clientv3's: a value compared with a number, or a revision with a string, is a bug.
	if _, isString := v.(string); isString != (cmp.target == "VALUE") {
		panic(fmt.Sprintf("etcdrpc: a comparison of %s with %T", cmp.target, v))
	}
	return cmp
}

// Txn is a transaction being built: If its comparisons all hold, Then its operations, Else the
// others, at once.
type Txn struct {
	c       *Client
	ctx     context.Context
	cmps    []Cmp
	thenOps []Op
	elseOps []Op
}

// If adds comparisons.
func (t *Txn) If(cmps ...Cmp) *Txn {
	t.cmps = append(t.cmps, cmps...)
	return t
}

// Then adds the operations made when the comparisons hold.
func (t *Txn) Then(ops ...Op) *Txn {
	t.thenOps = append(t.thenOps, ops...)
	return t
}

// Else adds the operations made when one does not.
func (t *Txn) Else(ops ...Op) *Txn {
	t.elseOps = append(t.elseOps, ops...)
	return t
}

// Commit sends the transaction. A transaction of gets alone is sent again to another member
// when its first does not answer; another may have been applied when it fails with
// Unavailable.
func (t *Txn) Commit() (*TxnResponse, error) {
	readOnly := readOnlyOps(t.thenOps) && readOnlyOps(t.elseOps)
	data, err := t.c.call(t.ctx, "/etcdserverpb.KV/Txn", appendTxn(nil, t.cmps, t.thenOps, t.elseOps), readOnly)
	if err != nil {
		return nil, err
	}
	resp, err := decoded(decodeTxn(data))
	if err == nil {
		err = answersTo(resp, t.thenOps, t.elseOps)
	}
	if err != nil {
		return nil, err
	}
	return resp, nil
}

func readOnlyOps(ops []Op) bool {
	for _, op := range ops {
		if op.t == tTxn {
			if !readOnlyOps(op.thenOps) || !readOnlyOps(op.elseOps) {
				return false
			}
		} else if op.t != tRange {
			return false
		}
	}
	return true
}

// answersTo checks that a transaction's response has a response of its kind for each
// operation of the branch it took, nested ones too: the store reads them by position.
func answersTo(resp *TxnResponse, thenOps, elseOps []Op) error {
	ops := elseOps
	if resp.Succeeded {
		ops = thenOps
	}
	if len(resp.Responses) != len(ops) {
		return &Error{Code: codeBadResponse, Message: fmt.Sprintf("etcdrpc: a transaction of %d operations answered with %d responses", len(ops), len(resp.Responses))}
	}
	for i, op := range ops {
		r := resp.Responses[i]
		ok := false
		switch op.t {
		case tRange:
			ok = r.Range != nil
		case tPut:
			ok = r.Put != nil
		case tDeleteRange:
			ok = r.Delete != nil
		case tTxn:
			ok = r.Txn != nil && answersTo(r.Txn, op.thenOps, op.elseOps) == nil
		}
		if !ok {
			return &Error{Code: codeBadResponse, Message: fmt.Sprintf("etcdrpc: a transaction's response %d is not its operation's", i)}
		}
	}
	return nil
}
