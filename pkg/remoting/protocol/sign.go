package protocol

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"sort"
)

// SignatureMAC is the HMAC-SHA1 under secret of what RocketMQ's plain ACL
// signs: the values of every ext field except Signature and the keys in
// skip, in the order of their sorted keys, then the body. Signers send it
// base64-encoded (Signature); verifiers compare it with hmac.Equal.
func SignatureMAC(ext map[string]string, body, secret []byte, skip ...string) []byte {
	keys := make([]string, 0, len(ext))
	for k := range ext {
		if k != ExtSignature && !containsString(skip, k) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	h := hmac.New(sha1.New, secret)
	for _, k := range keys {
		h.Write([]byte(ext[k]))
	}
	h.Write(body)
	return h.Sum(nil)
}

// Sign adds the plain-ACL fields to c as the official clients do:
// AccessKey, SecurityToken when token is not "", and Signature over the
// other ext fields and the body. It replaces a Signature c already has.
// c must not be shared: Sign writes its ext fields. A typed Header is
// folded into ExtFields first, so that the signature covers its fields.
func (c *Command) Sign(accessKey, secretKey, token string) {
	if c.Header != nil {
		c.ExtFields, c.Header = c.Fields(), nil
	}
	c.SetExt(ExtAccessKey, accessKey)
	if token != "" {
		c.SetExt(ExtSecurityToken, token)
	}
	mac := SignatureMAC(c.ExtFields, c.Body, []byte(secretKey))
	c.SetExt(ExtSignature, base64.StdEncoding.EncodeToString(mac))
}
