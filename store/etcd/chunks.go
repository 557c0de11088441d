package etcd

import (
	"context"
	"fmt"

	"github.com/crw-dev/crw/store/etcd/chunks"
	"github.com/crw-dev/crw/store/etcd/etcdrpc"
)

// chunk is the key of chunk i of row seq.
func (k keys) chunk(seq uint64, i int) string {
	return k.run + fmt.Sprintf("chunks/%016x/%04x", seq, i)
}

// putRowChunks writes row seq's chunks on the holding's condition (chunks.Put).
func (j *Journal) putRowChunks(ctx context.Context, seq uint64, data []byte) (ref string, ok bool, err error) {
	return chunks.Put(ctx, j.h.cli, func(i int) string { return j.h.keys.chunk(seq, i) }, data,
		etcdrpc.Compare(etcdrpc.CreateRevision(j.h.keys.owner()), "=", j.h.rev))
}

// rowBytes is the row stored under row seq's key.
func rowBytes(ctx context.Context, cli *etcdrpc.Client, k keys, seq uint64, value []byte) ([]byte, error) {
	data, err := chunks.Get(ctx, cli, func(i int) string { return k.chunk(seq, i) }, value, fmt.Sprintf("journal: row %d", seq))
	if err != nil {
		return nil, err
	}
	return data, nil
}
