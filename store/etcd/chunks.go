package etcd

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/crw-dev/crw/errs"
)

// A value larger than inlineBytes (a row with a long prompt or a large answer, a large
// workflow file) is not one etcd value: its bytes go in chunks of chunkBytes under keys of its
// own, each put by a transaction of its own (a row's on the same condition as every commit,
// the holding), before the key the value belongs to is given a reference to them:
// "crw-chunks N BYTES SHA256". No row or file a store keeps starts so (a row is a JSON object;
// a file that would is always chunked). A commit that fails after its chunks leaves them for
// the next holder to write over: the reference names how many there are and their digest, so
// a chunk left over is never read.
const (
	inlineBytes = 512 << 10
	chunkBytes  = 1 << 20
	chunkMark   = "crw-chunks "
	// refBytes bounds a reference's length in a commit's size.
	refBytes = 128
)

// chunk is the key of chunk i of row seq.
func (k keys) chunk(seq uint64, i int) string {
	return k.run + fmt.Sprintf("chunks/%016x/%04x", seq, i)
}

// stored is what a value takes of a commit: itself, or the reference to its chunks.
func stored(data []byte) int {
	if chunked(data) {
		return refBytes
	}
	return len(data)
}

// chunked tells whether data is stored in chunks.
func chunked(data []byte) bool {
	return len(data) > inlineBytes || bytes.HasPrefix(data, []byte(chunkMark))
}

// putChunks writes data's chunks under the keys chunkKey names, each transaction on conds,
// and returns the reference to them. ok is false when conds failed; err when etcd did not say
// whether a chunk was written.
func putChunks(ctx context.Context, cli *clientv3.Client, chunkKey func(i int) string, data []byte, conds ...clientv3.Cmp) (ref string, ok bool, err error) {
	n := 0
	for off := 0; off < len(data) || n == 0; off += chunkBytes {
		part := data[off:min(off+chunkBytes, len(data))]
		resp, err := cli.Txn(ctx).If(conds...).Then(clientv3.OpPut(chunkKey(n), string(part))).Commit()
		if err != nil {
			return "", false, err
		}
		if !resp.Succeeded {
			return "", false, nil
		}
		n++
	}
	sum := sha256.Sum256(data)
	return fmt.Sprintf("%s%d %d %s", chunkMark, n, len(data), hex.EncodeToString(sum[:])), true, nil
}

// unchunked is the value stored under a key: the value itself, or the chunks its reference
// names (under the keys chunkKey names), read and checked against the reference. what names
// the value in an error.
func unchunked(ctx context.Context, cli *clientv3.Client, chunkKey func(i int) string, value []byte, what string) ([]byte, error) {
	if !bytes.HasPrefix(value, []byte(chunkMark)) {
		return value, nil
	}
	damaged := func(why string) error {
		return errs.New(errs.IncompatibleSchema, "%s is stored in chunks, and %s", what, why)
	}
	f := strings.Fields(string(value[len(chunkMark):]))
	if len(f) != 3 {
		return nil, damaged("its reference does not read")
	}
	n, errN := strconv.Atoi(f[0])
	size, errSize := strconv.Atoi(f[1])
	if errN != nil || errSize != nil || n < 1 || size < 0 || n != max(1, (size+chunkBytes-1)/chunkBytes) {
		return nil, damaged("its reference does not read")
	}
	resp, err := cli.Get(ctx, chunkKey(0), clientv3.WithRange(chunkKey(n)))
	if err != nil {
		return nil, errs.New(errs.RunUnavailable, "the chunks of %s could not be read", what).Wrap(err)
	}
	if len(resp.Kvs) != n {
		return nil, damaged(fmt.Sprintf("%d of its %d chunks are there", len(resp.Kvs), n))
	}
	data := make([]byte, 0, size)
	for i, kv := range resp.Kvs {
		if string(kv.Key) != chunkKey(i) {
			return nil, damaged(fmt.Sprintf("its chunk %d is missing", i))
		}
		data = append(data, kv.Value...)
	}
	sum := sha256.Sum256(data)
	if len(data) != size || hex.EncodeToString(sum[:]) != f[2] {
		return nil, damaged("its chunks are not what its reference names")
	}
	return data, nil
}

// putRowChunks writes row seq's chunks on the holding's condition (putChunks).
func (j *Journal) putRowChunks(ctx context.Context, seq uint64, data []byte) (ref string, ok bool, err error) {
	return putChunks(ctx, j.h.cli, func(i int) string { return j.h.keys.chunk(seq, i) }, data,
		clientv3.Compare(clientv3.CreateRevision(j.h.keys.owner()), "=", j.h.rev))
}

// rowBytes is the row stored under row seq's key.
func rowBytes(ctx context.Context, cli *clientv3.Client, k keys, seq uint64, value []byte) ([]byte, error) {
	data, err := unchunked(ctx, cli, func(i int) string { return k.chunk(seq, i) }, value, fmt.Sprintf("journal: row %d", seq))
	if err != nil {
		return nil, err
	}
	return data, nil
}
