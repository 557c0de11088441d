// Package chunks keeps a value larger than one etcd value: its bytes in chunks under keys of
// their own, and in its place a reference that names how many there are and their digest.
package chunks

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/store/etcd/etcdrpc"
)

// A value larger than InlineBytes (a row with a long prompt or a large answer, a large
// workflow file) is not one etcd value: its bytes go in chunks of ChunkBytes under keys of its
// own, each put by a transaction of its own (a row's on the same condition as every commit,
// the holding), before the key the value belongs to is given a reference to them:
// "crw-chunks N BYTES SHA256". No row or file a store keeps starts so (a row is a JSON object;
// a file that would is always chunked). A commit that fails after its chunks leaves them for
// the next holder to write over: the reference names how many there are and their digest, so
// a chunk left over is never read.
const (
	InlineBytes = 512 << 10
	ChunkBytes  = 1 << 20
	Mark        = "crw-chunks "
	// RefBytes bounds a reference's length in a commit's size.
	RefBytes = 128
)

// Stored is what a value takes of a commit: itself, or the reference to its chunks.
func Stored(data []byte) int {
	if Chunked(data) {
		return RefBytes
	}
	return len(data)
}

// Chunked tells whether data is stored in chunks.
func Chunked(data []byte) bool {
	return len(data) > InlineBytes || bytes.HasPrefix(data, []byte(Mark))
}

// Put writes data's chunks under the keys chunkKey names, each transaction on conds,
// and returns the reference to them. ok is false when conds failed; err when etcd did not say
// whether a chunk was written.
func Put(ctx context.Context, cli *etcdrpc.Client, chunkKey func(i int) string, data []byte, conds ...etcdrpc.Cmp) (ref string, ok bool, err error) {
	n := 0
	for off := 0; off < len(data) || n == 0; off += ChunkBytes {
		part := data[off:min(off+ChunkBytes, len(data))]
		resp, err := cli.Txn(ctx).If(conds...).Then(etcdrpc.OpPut(chunkKey(n), string(part))).Commit()
		if err != nil {
			return "", false, err
		}
		if !resp.Succeeded {
			return "", false, nil
		}
		n++
	}
	sum := sha256.Sum256(data)
	return fmt.Sprintf("%s%d %d %s", Mark, n, len(data), hex.EncodeToString(sum[:])), true, nil
}

// Get is the value stored under a key: the value itself, or the chunks its reference
// names (under the keys chunkKey names), read and checked against the reference. what names
// the value in an error.
func Get(ctx context.Context, cli *etcdrpc.Client, chunkKey func(i int) string, value []byte, what string) ([]byte, error) {
	if !bytes.HasPrefix(value, []byte(Mark)) {
		return value, nil
	}
	damaged := func(why string) error {
		return errs.New(errs.IncompatibleSchema, "%s is stored in chunks, and %s", what, why)
	}
	f := strings.Fields(string(value[len(Mark):]))
	if len(f) != 3 {
		return nil, damaged("its reference does not read")
	}
	n, errN := strconv.Atoi(f[0])
	size, errSize := strconv.Atoi(f[1])
	if errN != nil || errSize != nil || n < 1 || size < 0 || n != max(1, (size+ChunkBytes-1)/ChunkBytes) {
		return nil, damaged("its reference does not read")
	}
	resp, err := cli.Get(ctx, chunkKey(0), etcdrpc.WithRange(chunkKey(n)))
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
