package etcdrpc

// ResponseHeader is the header of every response: the revision of the store when it was
// served.
type ResponseHeader struct {
	ClusterID uint64
	MemberID  uint64
	Revision  int64
	RaftTerm  uint64
}

// KeyValue is a key as the store holds it.
type KeyValue struct {
	Key            []byte
	CreateRevision int64
	ModRevision    int64
	Version        int64
	Value          []byte
	Lease          int64
}

// RangeResponse is what a range (a get) read.
type RangeResponse struct {
	Header ResponseHeader
	Kvs    []*KeyValue
	More   bool
	Count  int64
}

// GetResponse is the response of Get.
type GetResponse = RangeResponse

// PutResponse is the response of a put.
type PutResponse struct {
	Header ResponseHeader
}

// DeleteRangeResponse is the response of a delete.
type DeleteRangeResponse struct {
	Header  ResponseHeader
	Deleted int64
}

// TxnResponse is the response of a transaction: whether its comparisons held, and the
// response of each operation of the branch it took.
type TxnResponse struct {
	Header    ResponseHeader
	Succeeded bool
	Responses []*ResponseOp
}

// ResponseOp is the response of one operation of a transaction.
type ResponseOp struct {
	Range  *RangeResponse
	Put    *PutResponse
	Delete *DeleteRangeResponse
	Txn    *TxnResponse
}

// GetResponseRange is the response of a get, nil for another operation.
func (r *ResponseOp) GetResponseRange() *RangeResponse { return r.Range }

// GetResponsePut is the response of a put, nil for another operation.
func (r *ResponseOp) GetResponsePut() *PutResponse { return r.Put }

// GetResponseDeleteRange is the response of a delete, nil for another operation.
func (r *ResponseOp) GetResponseDeleteRange() *DeleteRangeResponse { return r.Delete }

// GetResponseTxn is the response of a nested transaction, nil for another operation.
func (r *ResponseOp) GetResponseTxn() *TxnResponse { return r.Txn }

// LeaseID names a lease.
type LeaseID int64

// NoLease is no lease.
const NoLease LeaseID = 0

// LeaseGrantResponse is a lease granted.
type LeaseGrantResponse struct {
	Header ResponseHeader
	ID     LeaseID
	TTL    int64
	Error  string
}

// LeaseRevokeResponse is a lease revoked.
type LeaseRevokeResponse struct {
	Header ResponseHeader
}

// LeaseKeepAliveResponse is a lease kept alive: TTL is what it has left, 0 or less when the
// lease is gone.
type LeaseKeepAliveResponse struct {
	Header ResponseHeader
	ID     LeaseID
	TTL    int64
}

// EventType is what happened to a key.
type EventType int32

// The events of a watch.
const (
	PUT    EventType = 0
	DELETE EventType = 1
)

// Event is a change of a key a watch saw.
type Event struct {
	Type   EventType
	Kv     *KeyValue
	PrevKv *KeyValue
}
