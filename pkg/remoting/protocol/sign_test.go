package protocol

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"testing"
)

// TestSign: the Signature is HMAC-SHA1 over the other ext values in key
// order, then the body (RocketMQ's AclClientRPCHook), computed here by
// hand for each case.
func TestSign(t *testing.T) {
	cases := []struct {
		name    string
		ext     map[string]string
		body    string
		token   string
		content string // what is signed, in order
	}{
		{"fields sorted by key, then the body", map[string]string{"topic": "T", "a": "1"}, "payload", "",
			"ak" + "1" + "T" + "payload"}, // AccessKey sorts first (upper case)
		{"an old signature is replaced, not signed", map[string]string{"Signature": "stale", "b": "x"}, "", "",
			"ak" + "x"},
		{"a security token is signed", map[string]string{"b": "x"}, "", "tok",
			"ak" + "tok" + "x"},
	}
	cases = append(cases, struct {
		name    string
		ext     map[string]string
		body    string
		token   string
		content string
	}{"a typed header's fields are signed", nil, "b", "", "ak" + "1" + "2" + "3" + "4" + "b"})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := NewRequest(SendMessage, tc.ext, []byte(tc.body))
			if tc.ext == nil { // maxOffset minOffset nextBeginOffset suggestWhichBrokerId
				c = NewTypedRequest(PullMessage, &PullMessageResponseHeader{MaxOffset: 1, MinOffset: 2, NextBeginOffset: 3,
					SuggestWhichBrokerID: 4}, []byte(tc.body))
			}
			c.Sign("ak", "secret", tc.token)
			h := hmac.New(sha1.New, []byte("secret"))
			h.Write([]byte(tc.content))
			if want := base64.StdEncoding.EncodeToString(h.Sum(nil)); c.ExtFields[ExtSignature] != want {
				t.Fatalf("Signature %q, want %q", c.ExtFields[ExtSignature], want)
			}
			if c.ExtFields[ExtAccessKey] != "ak" {
				t.Fatalf("AccessKey %q", c.ExtFields[ExtAccessKey])
			}
		})
	}
	// FieldsMAC merges a typed header's entries with ExtFields, whose
	// value wins on a clash (as in Fields), and leaves out skipped keys of
	// either.
	typed := NewTypedRequest(PullMessage, &PullMessageResponseHeader{MaxOffset: 1, MinOffset: 2, NextBeginOffset: 3,
		SuggestWhichBrokerID: 4}, []byte("b"))
	typed.ExtFields = map[string]string{"minOffset": "X", "a": "A", "n": "N", "zz": "Z", ExtSignature: "S"}
	h0 := hmac.New(sha1.New, []byte("s"))
	h0.Write([]byte("A" + "1" + "X" + "N" + "Z" + "b")) // a maxOffset minOffset n zz (nextBeginOffset skipped)
	if got := typed.FieldsMAC([]byte("s"), "nextBeginOffset", "suggestWhichBrokerId"); !hmac.Equal(got, h0.Sum(nil)) {
		t.Fatal("FieldsMAC: wrong content")
	}
	mac := SignatureMAC(map[string]string{"a": "1", "skip": "2"}, nil, []byte("s"), "skip")
	h := hmac.New(sha1.New, []byte("s"))
	h.Write([]byte("1"))
	if !hmac.Equal(mac, h.Sum(nil)) {
		t.Fatal("SignatureMAC signed a skipped key")
	}
}
