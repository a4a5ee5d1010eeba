package tagger

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// ParseAnnotation reads the tags a pod asks for. Two formats are accepted,
// as in k8s-eni-tagger: a JSON object of strings ({"Team":"Dev"}) and a
// comma-separated list of key=value pairs (Team=Dev,Cost=1). An empty or
// blank annotation asks for no tags. Errors say exactly what is wrong so
// the pod's owner can fix the annotation from the condition message alone.
func ParseAnnotation(s string) (map[string]string, error) {
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
	for k := range tags {
		if k == "" {
			return nil, errors.New("a tag key is empty")
		}
	}
	return tags, nil
}

func parseJSON(s string) (map[string]string, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	if _, err := dec.Token(); err != nil { // the opening brace
		return nil, fmt.Errorf("malformed JSON: %v", err)
	}
	tags := map[string]string{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("malformed JSON: %v", err)
		}
		key, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("malformed JSON: expected a key, got %v", tok)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("malformed JSON at key %q: %v", key, err)
		}
		var value string
		if err := json.Unmarshal(raw, &value); err != nil || !strings.HasPrefix(string(raw), `"`) {
			return nil, fmt.Errorf("the value of key %q must be a JSON string, got %s", key, kindOf(raw))
		}
		if _, dup := tags[key]; dup {
			return nil, fmt.Errorf("duplicate key %q", key)
		}
		tags[key] = value
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, fmt.Errorf("malformed JSON: %v", err)
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
			return nil, fmt.Errorf("entry %d (%q) is not key=value", i+1, item)
		}
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		if key == "" {
			return nil, fmt.Errorf("entry %d (%q) has an empty key", i+1, item)
		}
		if _, dup := tags[key]; dup {
			return nil, fmt.Errorf("duplicate key %q", key)
		}
		tags[key] = value
	}
	return tags, nil
}
