package protocol

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"slices"
)

// SignatureMAC is the HMAC-SHA1 under secret of what RocketMQ's plain ACL
// signs: the values of every ext field except Signature and the keys in
// skip, in the order of their sorted keys, then the body. Signers send it
// base64-encoded (Signature); verifiers compare it with hmac.Equal.
func SignatureMAC(ext map[string]string, body, secret []byte, skip ...string) []byte {
	return signatureMAC(nil, ext, body, secret, skip)
}

// FieldsMAC is SignatureMAC(c.Fields(), c.Body, secret, skip...) without
// building Fields' map: a typed Header's entries (AppendBinaryExt writes
// them sorted by key) are merged with ExtFields' sorted keys, ExtFields'
// value winning on a clash as in Fields. A broker verifies a request's
// Signature with it.
func (c *Command) FieldsMAC(secret []byte, skip ...string) []byte {
	var entries []byte
	if c.Header != nil {
		entries = c.Header.AppendBinaryExt(make([]byte, 0, 512))
	}
	return signatureMAC(entries, c.ExtFields, c.Body, secret, skip)
}

// Field returns ext field k and whether c has it, as Fields()[k] would,
// without Fields' map (Ext, with the presence).
func (c *Command) Field(k string) (string, bool) {
	if v, ok := c.ExtFields[k]; ok || c.Header == nil {
		return v, ok
	}
	return headerField(c.Header, k)
}

// signatureMAC signs the values of the binary ext entries (sorted by key,
// as AppendBinaryExt writes them) and of ext, in the order of their keys
// (ext's value for a key both have), leaving out Signature and skip, then
// body.
func signatureMAC(entries []byte, ext map[string]string, body, secret []byte, skip []string) []byte {
	var kb [8]string
	keys := kb[:0]
	n := len(entries)
	for k, v := range ext {
		if k != ExtSignature && !containsString(skip, k) {
			keys = append(keys, k)
			n += len(v)
		}
	}
	slices.Sort(keys)
	content := make([]byte, 0, n)
	for i := 0; i < len(entries) || len(keys) > 0; {
		var k, v []byte
		next := i
		if i < len(entries) {
			k, v, next = nextExt(entries, i)
		}
		if len(keys) > 0 && (i >= len(entries) || keys[0] <= string(k)) {
			if i < len(entries) && keys[0] == string(k) {
				i = next // ExtFields' value wins
			}
			content = append(content, ext[keys[0]]...)
			keys = keys[1:]
			continue
		}
		if !skipKey(k, skip) {
			content = append(content, v...)
		}
		i = next
	}
	h := hmac.New(sha1.New, secret)
	h.Write(content)
	h.Write(body)
	return h.Sum(nil)
}

// skipKey reports whether a header entry's key k is left out of the
// signed content.
func skipKey(k []byte, skip []string) bool {
	if string(k) == ExtSignature {
		return true
	}
	for _, s := range skip {
		if string(k) == s {
			return true
		}
	}
	return false
}

// Sign adds the plain-ACL fields to c as the official clients do:
// AccessKey, SecurityToken when token is not "", and Signature over the
// other ext fields and the body. It replaces a Signature c already has.
// c must not be shared: Sign writes its ext fields. A typed Header is
// folded into ExtFields first, so that the signature covers its fields.
func (c *Command) Sign(accessKey, secretKey, token string) {
	if c.Header != nil {
		c.ExtFields, c.Header, c.typedHeader = c.Fields(), nil, false
	}
	c.SetExt(ExtAccessKey, accessKey)
	if token != "" {
		c.SetExt(ExtSecurityToken, token)
	}
	mac := SignatureMAC(c.ExtFields, c.Body, []byte(secretKey))
	c.SetExt(ExtSignature, base64.StdEncoding.EncodeToString(mac))
}
