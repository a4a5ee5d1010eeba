package tagplan

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/eni-operator/eni-operator/internal/bounded"
	"github.com/eni-operator/eni-operator/internal/tagkeys"
)

// MaxAnnotationBytes bounds the tag annotation the tagger reads; a longer
// one is refused before it is parsed. AWS allows 50 tags on an ENI, keys
// of at most 127 characters and values of at most 256, so the largest
// annotation that can be valid, in ASCII with JSON quoting, is about
// 50 x (127 + 256 + 6) = 19.5 KB; 32 KiB leaves room for that and for
// multi-byte characters, and is an eighth of Kubernetes' 256 KiB limit on
// a pod's annotations. Anything bigger cannot be a tag set, and reading
// it would only cost memory, CPU and (quoted back) status and log bytes.
const MaxAnnotationBytes = 32 << 10

// ParseAnnotation reads the tags a pod asks for, in either of
// k8s-eni-tagger's formats: a JSON object of strings ({"Team":"Dev"}) or
// key=value pairs (Team=Dev,Cost=1); a blank annotation asks for none.
// Every tag is held to tagkeys.CheckTag (the k=v form trims white space
// around keys and values, where it is layout; a quoted JSON key keeps it
// and is refused). Every offending tag is reported; an annotation over
// MaxAnnotationBytes is refused unread; errors quote the input only in
// short pieces (bounded.Quoted).
func ParseAnnotation(s string) (map[string]string, error) {
	size, over := len(s), len(s) > MaxAnnotationBytes
	if n, ok := oversizeLength(s); ok {
		size, over = n, true
	}
	if over {
		return nil, fmt.Errorf("it is %d bytes, over the limit of %d (50 tags of the longest keys and values AWS allows fit in about 20 KB); not read", size, MaxAnnotationBytes)
	}
	// encoding/json would read invalid UTF-8 as U+FFFD: refused here, as
	// in the k=v form, rather than written as something not asked for.
	if !utf8.ValidString(s) {
		i := invalidUTF8At(s)
		return nil, fmt.Errorf("it is not valid UTF-8 (byte 0x%02X at byte %d): write it as UTF-8 text", s[i], i)
	}
	s = strings.TrimSpace(s)
	if s == "" {
		return map[string]string{}, nil
	}
	var (
		tags map[string]string
		err  error
	)
	if strings.HasPrefix(s, "{") {
		tags, err = parseJSON(s)
	} else {
		tags, err = parsePairs(s)
	}
	if err != nil {
		return nil, err
	}
	if err := checkChars(tags); err != nil {
		return nil, err
	}
	return tags, nil
}

// checkChars applies the character rule to every tag, in key order.
func checkChars(tags map[string]string) error {
	var problems []error
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		if err := tagkeys.CheckTag(k, tags[k]); err != nil {
			problems = append(problems, fmt.Errorf("tag %s: %w", bounded.Quoted(k), err))
		}
	}
	return errors.Join(problems...)
}

// invalidUTF8At is the offset of s's first byte that is not UTF-8.
func invalidUTF8At(s string) int {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
				return i
			}
		}
	}
	return 0
}

// oversizeMarker starts the stand-in the pod cache keeps for an
// annotation over MaxAnnotationBytes. It begins with a NUL byte, which
// no one writes into a tag annotation by mistake; an annotation that
// imitates it gets nothing but the refusal it describes.
const oversizeMarker = "\x00eni-operator: oversize annotation of "

// OversizeStandIn is the short stand-in for an oversize annotation: its
// size, and a digest so a change to it is still a change.
func OversizeStandIn(s string) string {
	sum := sha256.Sum256([]byte(s))
	return fmt.Sprintf("%s%d bytes, sha256 %x", oversizeMarker, len(s), sum[:8])
}

// oversizeLength reads the original size back from a stand-in.
func oversizeLength(s string) (int, bool) {
	rest, ok := strings.CutPrefix(s, oversizeMarker)
	if !ok {
		return 0, false
	}
	var n int
	if _, err := fmt.Sscanf(rest, "%d bytes", &n); err != nil {
		return 0, false
	}
	return n, true
}

func parseJSON(s string) (map[string]string, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	if _, err := dec.Token(); err != nil { // the opening brace
		return nil, fmt.Errorf("malformed JSON: %s", bounded.Truncate(err.Error(), bounded.Quote*2))
	}
	tags := map[string]string{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("malformed JSON: %s", bounded.Truncate(err.Error(), bounded.Quote*2))
		}
		key, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("malformed JSON: expected a key, got %s", bounded.Quoted(fmt.Sprint(tok)))
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("malformed JSON at key %s: %s", bounded.Quoted(key), bounded.Truncate(err.Error(), bounded.Quote*2))
		}
		var value string
		if err := json.Unmarshal(raw, &value); err != nil || !strings.HasPrefix(string(raw), `"`) {
			return nil, fmt.Errorf("the value of key %s must be a JSON string, got %s", bounded.Quoted(key), kindOf(raw))
		}
		if _, dup := tags[key]; dup {
			return nil, fmt.Errorf("duplicate key %s", bounded.Quoted(key))
		}
		tags[key] = value
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, fmt.Errorf("malformed JSON: %s", bounded.Truncate(err.Error(), bounded.Quote*2))
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("malformed JSON: unexpected data after the closing brace")
	}
	return tags, nil
}

func kindOf(raw json.RawMessage) string {
	switch t := strings.TrimSpace(string(raw)); {
	case t == "null":
		return "null"
	case t == "true" || t == "false":
		return "a boolean"
	case strings.HasPrefix(t, "{"):
		return "an object"
	case strings.HasPrefix(t, "["):
		return "an array"
	default:
		return "a number"
	}
}

func parsePairs(s string) (map[string]string, error) {
	tags := map[string]string{}
	for i, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			return nil, fmt.Errorf("entry %d is empty (two commas in a row, or a comma at an end)", i+1)
		}
		key, value, ok := strings.Cut(item, "=")
		if !ok {
			return nil, fmt.Errorf("entry %d (%s) is not key=value", i+1, bounded.Quoted(item))
		}
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		if key == "" {
			return nil, fmt.Errorf("entry %d (%s) has an empty key", i+1, bounded.Quoted(item))
		}
		if _, dup := tags[key]; dup {
			return nil, fmt.Errorf("duplicate key %s", bounded.Quoted(key))
		}
		tags[key] = value
	}
	return tags, nil
}
