package journal

import (
	"bytes"
	"encoding/json"
	"fmt"
	"runtime"
	"sync"

	fastjson "github.com/goccy/go-json"
)

// DecodeRows decodes stored row values, seq 1 first, on every core: a resume reads its whole
// journal before it can go on, and decoding is most of that time. Each row must carry the
// seq of its place.
func DecodeRows(raw [][]byte) ([]Row, error) { return DecodeRowsFrom(raw, 1) }

// DecodeRowsFrom decodes stored row values whose first has seq first, as DecodeRows does.
func DecodeRowsFrom(raw [][]byte, first uint64) ([]Row, error) {
	rows := make([]Row, len(raw))
	errs := make([]error, len(raw))
	parallel(len(raw), func(i int) {
		if err := fastjson.Unmarshal(raw[i], &rows[i]); err != nil {
			errs[i] = fmt.Errorf("row %d: %v", first+uint64(i), err)
		} else if rows[i].Seq != first+uint64(i) {
			errs[i] = fmt.Errorf("row %d says seq %d", first+uint64(i), rows[i].Seq)
		}
	})
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return rows, nil
}

// DecodeInto decodes the stored row value of seq into r, which it clears first: a reader that
// passes over many rows decodes them all into one Row rather than allocate each.
func DecodeInto(data []byte, r *Row, seq uint64) error {
	*r = Row{}
	if err := fastjson.Unmarshal(data, r); err != nil {
		return fmt.Errorf("row %d: %v", seq, err)
	}
	if r.Seq != seq {
		return fmt.Errorf("row %d says seq %d", seq, r.Seq)
	}
	return nil
}

// parallel calls fn(i) for every i below n, in contiguous chunks on every core.
func parallel(n int, fn func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), max(1, n/256))
	chunk := (n + workers - 1) / workers
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		lo, hi := w*chunk, min((w+1)*chunk, n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := lo; i < hi; i++ {
				fn(i)
			}
		}()
	}
	wg.Wait()
}

// Encode is a row as every store keeps it: the bytes encoding/json makes of it
// (TestEncodeIsEncodingJSON holds that), made by the faster encoder the reader uses.
func Encode(r *Row) ([]byte, error) { return fastjson.Marshal(r) }

// MarshalPlain is v's JSON as json.Marshal makes it, but with <, > and & as they are (json.Marshal
// escapes them, inside a json.RawMessage too): what a store keeps of a result, an input or an
// answer reads back with the bytes it was given.
func MarshalPlain(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// plainResult is a run's result as a summary keeps it: compact, with the <, > and & that a
// row's encoding (encoding/json's, which escapes HTML) wrote as escapes given back
// (UnescapeHTML). A summary folded from the rows as written (a writer's) and one folded from
// the rows as stored (a journal's file made again from its log, a journal read without its
// summary) then hold the same bytes. A result that is no JSON is kept as it is.
func plainResult(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return raw
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return UnescapeHTML(b.Bytes())
}
