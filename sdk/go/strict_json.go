package colossus

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// decodeStrictObject decodes one JSON object with the strictness the descriptor and the
// bootstrap reply need: valid UTF-8, no duplicate member at any depth, nothing after the
// value. It returns the top-level members undecoded.
func decodeStrictObject(raw []byte) (map[string]json.RawMessage, error) {
	if !utf8.Valid(raw) {
		return nil, errors.New("is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := checkValue(dec, 0); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("has data after the JSON value")
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return nil, errors.New("must be a JSON object")
	}
	return obj, nil
}

// maxJSONDepth bounds nesting so a hostile file cannot exhaust the stack.
const maxJSONDepth = 32

func checkValue(dec *json.Decoder, depth int) error {
	if depth > maxJSONDepth {
		return errors.New("is nested too deeply")
	}
	tok, err := dec.Token()
	if err != nil {
		return errors.New("is not valid JSON")
	}
	delim, ok := tok.(json.Delim)
	if !ok {
		if depth == 0 {
			return errors.New("must be a JSON object")
		}
		return nil
	}
	switch delim {
	case '{':
		seen := map[string]bool{}
		for dec.More() {
			keyTok, err := dec.Token()
			if err != nil {
				return errors.New("is not valid JSON")
			}
			key, _ := keyTok.(string)
			if seen[key] {
				return fmt.Errorf("has the member %q twice", key)
			}
			seen[key] = true
			if err := checkValue(dec, depth+1); err != nil {
				return err
			}
		}
	case '[':
		if depth == 0 {
			return errors.New("must be a JSON object")
		}
		for dec.More() {
			if err := checkValue(dec, depth+1); err != nil {
				return err
			}
		}
	default:
		return errors.New("is not valid JSON")
	}
	if _, err := dec.Token(); err != nil {
		return errors.New("is not valid JSON")
	}
	return nil
}

// jsonString decodes a member that must be a JSON string.
func jsonString(raw json.RawMessage) (string, bool) {
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// jsonPositiveInt decodes a member that must be a JSON integer literal above zero.
func jsonPositiveInt(raw json.RawMessage) (int64, bool) {
	var n json.Number
	if len(raw) == 0 || raw[0] == '"' || json.Unmarshal(raw, &n) != nil {
		return 0, false
	}
	if bytes.ContainsAny(raw, ".eE") {
		return 0, false
	}
	v, err := n.Int64()
	return v, err == nil && v > 0
}
