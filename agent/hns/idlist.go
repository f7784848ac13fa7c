package hns

import (
	"errors"
	"fmt"
	"io"
	"iter"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// IDList is the answer of an ID enumeration (HcnEnumerateEndpoints,
// HcnEnumerateLoadBalancers): a JSON array of GUIDs, kept as the text HNS
// gave, checked once by ParseIDList. The agent's ID check reads about
// 120,000 IDs at 10k services only to fingerprint them; decoding the answer
// into a string per ID (encoding/json) cost more than everything else the
// check does, so the IDs are handed out as views into the text instead and
// nothing is allocated per ID.
type IDList struct {
	text string // a JSON array of GUID strings, or empty
	n    int
}

// ParseIDList checks that text is a JSON array of GUIDs, each optionally in
// braces (hcsshim reads them without; earlier versions of winproxy accepted
// both), and returns it as an IDList. No text (HCN's answer when it
// answered none) and null are an empty list, as before with encoding/json.
// Anything else is an error that says
// where the answer went wrong: invalid JSON (the JSON grammar is checked by
// jsontext, encoding/json/v2's decoder, which reads each value in place
// where encoding/json's token API allocates one string per ID), another
// type than an array of strings, a string that is not a GUID, or anything
// after the array. It does not look for duplicates, which would cost a set
// of every ID: a comparison by count and fingerprint (the applier's model)
// does not mistake them for the IDs they displace.
func ParseIDList(text string) (IDList, error) {
	if text == "" {
		return IDList{}, nil
	}
	d := jsontext.NewDecoder(strings.NewReader(text))
	switch tok, err := d.ReadToken(); {
	case errors.Is(err, io.EOF):
		return IDList{}, errors.New("ID list: no JSON value")
	case err != nil:
		return IDList{}, fmt.Errorf("ID list: %w", err)
	case tok.Kind() == 'n':
		return IDList{}, atEnd(d)
	case tok.Kind() != '[':
		return IDList{}, fmt.Errorf("ID list: a JSON %v where an array of GUIDs belongs", tok.Kind())
	}
	n := 0
	for d.PeekKind() != ']' {
		v, err := d.ReadValue()
		if err != nil {
			return IDList{}, fmt.Errorf("ID list: %w", err)
		}
		if v.Kind() != '"' || !isGUID(unbraced(v[1:len(v)-1])) {
			return IDList{}, fmt.Errorf("ID list: element %d (at byte %d) is not a GUID: %s", n, d.InputOffset()-int64(len(v)), excerpt(v))
		}
		n++
	}
	if _, err := d.ReadToken(); err != nil {
		return IDList{}, fmt.Errorf("ID list: %w", err)
	}
	return IDList{text: text, n: n}, atEnd(d)
}

// atEnd reports anything after the answer's value as an error.
func atEnd(d *jsontext.Decoder) error {
	switch _, err := d.ReadValue(); {
	case errors.Is(err, io.EOF):
		return nil
	case err != nil:
		return fmt.Errorf("ID list: %w", err)
	default:
		return fmt.Errorf("ID list: more than one JSON value (at byte %d)", d.InputOffset())
	}
}

// Len is the number of IDs.
func (l IDList) Len() int { return l.n }

// All yields the IDs in the order HNS listed them (HNS promises none), as
// spelt there without braces. Each is a view into the answer's text: no
// allocation, and a kept ID keeps the whole text alive (clone it for that).
func (l IDList) All() iter.Seq[string] {
	return func(yield func(string) bool) {
		// The text passed ParseIDList: every '"' opens or closes a GUID.
		s := l.text
		for {
			open := strings.IndexByte(s, '"')
			if open < 0 {
				return
			}
			s = s[open+1:]
			end := strings.IndexByte(s, '"')
			if !yield(unbraced(s[:end])) {
				return
			}
			s = s[end+1:]
		}
	}
}

// Contains reports whether id is in the list, whatever the case.
func (l IDList) Contains(id string) bool {
	for listed := range l.All() {
		if SameID(listed, id) {
			return true
		}
	}
	return false
}

// unbraced is s without the braces of "{GUID}".
func unbraced[T ~string | ~[]byte](s T) T {
	if len(s) == guidLen+2 && s[0] == '{' && s[len(s)-1] == '}' {
		return s[1 : len(s)-1]
	}
	return s
}

// guidLen is the length of a GUID's text, 8-4-4-4-12 hex digits.
const guidLen = 36

// isGUID reports whether s is a GUID's text (either case, no braces). It
// reads 120,000 GUIDs in an ID check at 10k services: a table lookup per
// byte, without a branch.
func isGUID(s []byte) bool {
	if len(s) != guidLen {
		return false
	}
	var wrong byte
	for i, c := range s {
		wrong |= guidClass[c] ^ guidForm[i]
	}
	return wrong == 0
}

// guidClass classes the bytes of a GUID's text: a hex digit is 1, '-' is 2,
// anything else 0; guidForm is the class each position wants.
var guidClass, guidForm = func() (class [256]byte, form [guidLen]byte) {
	for _, c := range "0123456789abcdefABCDEF" {
		class[c] = 1
	}
	class['-'] = 2
	for i := range form {
		form[i] = 1
	}
	for _, i := range []int{8, 13, 18, 23} {
		form[i] = 2
	}
	return class, form
}()

// excerpt is the start of a JSON value, for an error message that must stay
// short whatever HNS answered.
func excerpt(v jsontext.Value) string {
	const most = 48
	if len(v) > most {
		return string(v[:most]) + "…"
	}
	return string(v)
}
