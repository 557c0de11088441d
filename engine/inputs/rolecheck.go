package inputs

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"
)

// decodeWhole decodes the one JSON value a role file holds: text after it is an error.
func decodeWhole(dec *json.Decoder, v any) error {
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("text after the JSON value")
	}
	return nil
}

// checkModel refuses a model name with a control character: it goes into requests and logs
// line by line, so a NUL or a newline in it is a mistake, never a model.
func checkModel(model string) error {
	i := strings.IndexFunc(model, unicode.IsControl)
	if i < 0 {
		return nil
	}
	r, _ := utf8.DecodeRuneInString(model[i:])
	return fmt.Errorf("holds the control character %U at byte %d", r, i)
}
