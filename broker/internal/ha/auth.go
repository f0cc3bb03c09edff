package ha

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// Slave authentication (Tide's addition to RocketMQ's HA protocol): when
// the master has a secret (ServerOptions.Secret, broker key haAuthSecret)
// it opens every connection with a challenge, and streams nothing until
// the peer proved it knows the same secret:
//
//	slave                                               master
//	  | <--- challenge: "TIDEHA01" (8 B) + nonce (32 B) --- |  fresh random nonce
//	  | ---- proof: HMAC-SHA256(secret, label|nonce) -----> |  32 B, constant-time compare
//	  |      then the protocol above (report, transfers)    |  wrong or late: closed, nothing sent
//
// label is "tide-ha-slave\x00". The nonce makes a recorded proof useless
// on another connection. The secret never crosses the wire; the stream
// itself is not encrypted (use tlsEnable for that). The master does not
// prove itself to the slave.

// challengeMagic opens a master's challenge.
var challengeMagic = [8]byte{'T', 'I', 'D', 'E', 'H', 'A', '0', '1'}

const (
	nonceSize     = 32
	challengeSize = len(challengeMagic) + nonceSize
	proofSize     = sha256.Size
	proofLabel    = "tide-ha-slave\x00"
	// MinSecretLen is the shortest accepted secret.
	MinSecretLen = 16
)

// ErrAuth: a peer failed (or, for a slave, could not attempt) the HA
// authentication.
var ErrAuth = errors.New("ha: authentication failed")

func proof(secret, nonce []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(proofLabel))
	m.Write(nonce)
	return m.Sum(nil)
}

// challenge authenticates a slave connection on the master: it sends the
// challenge and checks the proof within timeout.
func challenge(nc net.Conn, secret []byte, timeout time.Duration) error {
	var ch [challengeSize]byte
	copy(ch[:], challengeMagic[:])
	nonce := ch[len(challengeMagic):]
	if _, err := rand.Read(nonce); err != nil {
		return fmt.Errorf("ha: nonce: %w", err)
	}
	if err := nc.SetDeadline(time.Now().Add(timeout)); err != nil {
		return err
	}
	if _, err := nc.Write(ch[:]); err != nil {
		return fmt.Errorf("%w: send challenge: %v", ErrAuth, err)
	}
	var got [proofSize]byte
	if _, err := io.ReadFull(nc, got[:]); err != nil {
		return fmt.Errorf("%w: no proof: %v", ErrAuth, err)
	}
	if !hmac.Equal(got[:], proof(secret, nonce)) {
		return fmt.Errorf("%w: wrong proof (haAuthSecret differs)", ErrAuth)
	}
	return nc.SetDeadline(time.Time{})
}

// answer is the slave's side: read the master's challenge and send the
// proof, within timeout.
func answer(nc net.Conn, secret []byte, timeout time.Duration) error {
	if err := nc.SetDeadline(time.Now().Add(timeout)); err != nil {
		return err
	}
	var ch [challengeSize]byte
	if _, err := io.ReadFull(nc, ch[:]); err != nil {
		return fmt.Errorf("%w: no challenge from the master (is haAuthSecret set there?): %v", ErrAuth, err)
	}
	if !bytes.Equal(ch[:len(challengeMagic)], challengeMagic[:]) {
		return fmt.Errorf("%w: the master sent no challenge (is haAuthSecret set there?)", ErrAuth)
	}
	if _, err := nc.Write(proof(secret, ch[len(challengeMagic):])); err != nil {
		return fmt.Errorf("%w: send proof: %v", ErrAuth, err)
	}
	return nc.SetDeadline(time.Time{})
}
