package journalfile

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// Rows of a journal of format formatSummed end in a checksum of their JSON, so damage inside a
// row's content (a flipped byte that still parses) is found when the row is read: bbolt checks
// its meta pages, not the values it stores.

// sumLen is the width of the CRC-32C that follows a row's JSON.
const sumLen = 4

// castagnoli is the CRC-32C table: the polynomial CPUs compute in hardware, so a row's
// checksum costs next to nothing beside its JSON encoding and the commit's fsync.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// seal appends the CRC-32C of data to it, big-endian: the stored value of a row.
func seal(data []byte) []byte {
	return binary.BigEndian.AppendUint32(data, crc32.Checksum(data, castagnoli))
}

// unseal checks a stored value's checksum and returns its JSON, a subslice of v. The error
// wraps ErrCorrupt and names the row's seq.
func unseal(seq uint64, v []byte) ([]byte, error) {
	if len(v) < sumLen {
		return nil, fmt.Errorf("%w: row %d: %d bytes, too short to hold its checksum", ErrCorrupt, seq, len(v))
	}
	data := v[:len(v)-sumLen]
	stored := binary.BigEndian.Uint32(v[len(v)-sumLen:])
	if got := crc32.Checksum(data, castagnoli); got != stored {
		return nil, fmt.Errorf("%w: row %d: checksum mismatch (stored %08x, content %08x): its content was changed", ErrCorrupt, seq, stored, got)
	}
	return data, nil
}

// rowJSON returns a stored value's JSON: checked and without its checksum when the journal's
// rows carry one, as it is otherwise.
func rowJSON(summed bool, seq uint64, v []byte) ([]byte, error) {
	if !summed {
		return v, nil
	}
	return unseal(seq, v)
}
