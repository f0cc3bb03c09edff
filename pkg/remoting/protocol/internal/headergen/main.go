// Command headergen writes the Encode and Decode methods of the typed
// ext-field headers of package protocol (headers_gen.go) from their struct
// declarations, so each header is declared once, as a Go struct whose tags
// name its wire fields, and every codec follows the same rules.
//
// It is run by go generate in pkg/remoting/protocol (the //go:generate line
// in headers.go) and by make generate; make generate-check and the test of
// this package fail when headers_gen.go is stale.
//
// # Which types
//
// A type whose doc comment carries the directive line
//
//	//rmq:codec
//
// gets an Encode and a Decode method. Its fields (or, for a type defined
// as another struct type of the package, that type's fields) each need an
// rmq struct tag; an embedded struct of the package contributes its own
// tagged fields. With "//rmq:codec short" the short names are used (the
// short= options), as SEND_MESSAGE_V2 does with the keys a..n.
//
// # The rmq tag
//
//	`rmq:"<wire name>[,option]..."`
//
// The wire name is the ext key, spelled as the Java field (or the literal
// key, e.g. TRACE_ON). Field types are string, bool, int32 and int64, or a
// type of the package whose underlying type is one of them. Options:
//
//	required   @CFNotNull: absent or empty is ErrMissingField
//	omitempty  not written when zero ("", false, 0)
//	positive   not written unless > 0
//	nullneg    Java Integer null as a negative number: not written when
//	           negative; absent or empty decodes as -1
//	nullid     Java Long null broker id: not written when NoBrokerID;
//	           absent or empty decodes as NoBrokerID
//	default=<expr>  an absent or empty optional int64 decodes as the Go
//	           expression (always written)
//	short=<k>  the key under "//rmq:codec short"
//
// Decode reads the fields in declaration order (so the first missing or
// bad field is the one reported) and, when the type has a method
// "validate() error", calls it after the fields decoded without error.
//
// Headers whose rules do not fit (fields written only under a condition
// on another field, for instance) keep hand-written methods, each with a
// comment why.
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	dir := flag.String("dir", ".", "directory of package protocol")
	out := flag.String("out", "headers_gen.go", "output file, relative to -dir")
	flag.Parse()
	if err := run(*dir, *out); err != nil {
		fmt.Fprintln(os.Stderr, "headergen:", err)
		os.Exit(1)
	}
}
