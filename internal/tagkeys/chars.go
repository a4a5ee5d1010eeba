package tagkeys

import (
	"errors"
	"fmt"
	"unicode"
	"unicode/utf8"
)

// The character rule for every tag key and value the operator takes from
// a user (pod annotation, NodeENI spec.tags, flags): UTF-8 text without
// control characters, and keys without white space at either end.
//
// Control characters are refused because nobody means them in a tag and
// they are how input is made to read as something else: a NUL can pass
// for a separator, newlines forge log lines, and
// a person reading the tag never sees them. White space at a key's ends
// makes "Team " a tag a person reads as "Team".

// CheckTag applies the character rule to a key and its value. The error
// says which of the two breaks it and how, naming the character by code
// point, never quoting it; callers name the tag.
func CheckTag(key, value string) error {
	if err := CheckKey(key); err != nil {
		return err
	}
	return CheckValue(value)
}

// CheckKey applies the character rule to a tag key: not empty, valid
// UTF-8, no control character, no white space at either end.
func CheckKey(key string) error {
	if key == "" {
		return errors.New("the key is empty: give the tag a name")
	}
	if err := checkText("key", key); err != nil {
		return err
	}
	if r, _ := utf8.DecodeRuneInString(key); unicode.IsSpace(r) {
		return fmt.Errorf("the key begins with white space (%U): remove it, white space is kept only inside a key", r)
	}
	if r, _ := utf8.DecodeLastRuneInString(key); unicode.IsSpace(r) {
		return fmt.Errorf("the key ends with white space (%U): remove it, white space is kept only inside a key", r)
	}
	return nil
}

// CheckValue applies the character rule to a tag value: valid UTF-8 and
// no control character. An empty value is a tag without a value.
func CheckValue(value string) error { return checkText("value", value) }

// checkText finds the first byte that is not valid UTF-8 or starts a
// control character (Unicode category Cc: U+0000-U+001F, U+007F,
// U+0080-U+009F).
func checkText(what, s string) error {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
				return fmt.Errorf("the %s is not valid UTF-8 (byte 0x%02X at byte %d): write it as UTF-8 text", what, s[i], i)
			}
		}
		if unicode.IsControl(r) {
			return fmt.Errorf("the %s holds %U, a control character, at byte %d: tag keys and values may not hold control characters (U+0000-U+001F, U+007F-U+009F); remove it", what, r, i)
		}
	}
	return nil
}
