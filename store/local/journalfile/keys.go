package journalfile

import (
	"encoding/binary"
	"fmt"
)

// Schema is the layout version kept under meta/schema. Open refuses any other value.
const Schema = "crw-journal/1"

// Bucket and key names, declared once so the layout can be read in one place.
var (
	// bucketMeta holds keySchema, keyRun, keyFormat and keySummary.
	bucketMeta = []byte("meta")
	keySchema  = []byte("schema")
	keyRun     = []byte("run")
	// keyFormat says how rows are stored: absent in journals written before rows had a
	// checksum (plain JSON), formatSummed since (JSON then its CRC-32C, see sum.go), and
	// formatLogged in a journal with a log beside it (see rowlog).
	keyFormat = []byte("format")
	// keySummary is the journal.Summary of every row, as JSON, rewritten by each commit.
	keySummary = []byte("summary")

	// bucketCalls maps a call id to what the summary's fold knows of it: callOpen while its
	// newest attempt has no terminal row, else that row's status.
	bucketCalls = []byte("calls")

	// The Index beside the summary (journal.Index): bucketOpen maps an open call's id to its
	// journal.OpenCall, bucketUnknown a call's id to its journal.UnknownCall, bucketVerdicts
	// seqKey(seq) of an effect_reconciled row to its journal.Verdict, all as JSON. A journal
	// written before they were kept has none: its index is made when it is next opened for
	// writing (with its summary), and until then only by reading its rows.
	bucketOpen     = []byte("open")
	bucketUnknown  = []byte("unknown")
	bucketVerdicts = []byte("verdicts")

	// bucketRows maps seqKey(seq) to the row's JSON (and its checksum, by keyFormat); seq
	// starts at 1 and has no gaps.
	bucketRows = []byte("rows")
)

// keyFormat's values: formatSummed in a journal whose rows end in a checksum, formatLogged in
// one whose rows also go to its log (rowlog) first, each commit fsync'd there alone. A new format
// of rows comes with a new format of log (rowlog's magic): a file made again from its log takes
// formatLogged (rebuild), so a crw must tell a log of rows it cannot read before it makes one.
const (
	formatSummed = "2"
	formatLogged = "3"
)

// rowFormat reads keyFormat's value f: an unknown one is ErrSchema (a newer crw wrote it).
func rowFormat(f []byte) (summed, logged bool, err error) {
	switch {
	case f == nil:
		// Written before rows had a checksum: read as it is, and kept so when appended to.
		return false, false, nil
	case string(f) == formatSummed:
		return true, false, nil
	case string(f) == formatLogged:
		return true, true, nil
	}
	return false, false, fmt.Errorf("%w: row format %q, want %q or %q", ErrSchema, f, formatSummed, formatLogged)
}

// rowsFillPercent packs pages tightly: rows are only ever appended, so split
// pages never get the inserts that bbolt's default half-empty pages wait for.
const rowsFillPercent = 0.9

// seqKeyLen is the width of a rows key.
const seqKeyLen = 8

// seqKey encodes seq as 8 bytes big-endian, so byte order equals numeric order
// and Cursor.Last is the highest seq.
func seqKey(seq uint64) []byte {
	k := make([]byte, seqKeyLen)
	binary.BigEndian.PutUint64(k, seq)
	return k
}

// parseSeqKey decodes a rows key; ok is false for a key of the wrong width.
func parseSeqKey(k []byte) (seq uint64, ok bool) {
	if len(k) != seqKeyLen {
		return 0, false
	}
	return binary.BigEndian.Uint64(k), true
}
