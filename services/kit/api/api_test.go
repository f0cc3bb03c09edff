package api

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-kratos/kratos/v2/errors"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// testReq builds, at run time, the message
//
//	message Item { string product_id = 1; int32 quantity = 2; int64 unit_price = 3; }
//	message Req  { string user_id = 1; repeated Item items = 2; uint32 size = 3; bool flag = 4; }
func testReq(t testing.TB) protoreflect.MessageDescriptor {
	t.Helper()
	f := func(name string, n int32, typ descriptorpb.FieldDescriptorProto_Type, label descriptorpb.FieldDescriptorProto_Label, msg string) *descriptorpb.FieldDescriptorProto {
		fd := &descriptorpb.FieldDescriptorProto{Name: proto.String(name), Number: proto.Int32(n), Type: typ.Enum(),
			Label: label.Enum(), JsonName: proto.String(jsonName(name))}
		if msg != "" {
			fd.TypeName = proto.String(msg)
		}
		return fd
	}
	opt := descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL
	fdp := &descriptorpb.FileDescriptorProto{
		Name: proto.String("kit_api_test.proto"), Package: proto.String("kit.test"), Syntax: proto.String("proto3"),
		MessageType: []*descriptorpb.DescriptorProto{
			{Name: proto.String("Item"), Field: []*descriptorpb.FieldDescriptorProto{
				f("product_id", 1, descriptorpb.FieldDescriptorProto_TYPE_STRING, opt, ""),
				f("quantity", 2, descriptorpb.FieldDescriptorProto_TYPE_INT32, opt, ""),
				f("unit_price", 3, descriptorpb.FieldDescriptorProto_TYPE_INT64, opt, ""),
			}},
			{Name: proto.String("Req"), Field: []*descriptorpb.FieldDescriptorProto{
				f("user_id", 1, descriptorpb.FieldDescriptorProto_TYPE_STRING, opt, ""),
				f("items", 2, descriptorpb.FieldDescriptorProto_TYPE_MESSAGE, descriptorpb.FieldDescriptorProto_LABEL_REPEATED, ".kit.test.Item"),
				f("size", 3, descriptorpb.FieldDescriptorProto_TYPE_UINT32, opt, ""),
				f("flag", 4, descriptorpb.FieldDescriptorProto_TYPE_BOOL, opt, ""),
			}},
		},
	}
	fd, err := protodesc.NewFile(fdp, nil)
	if err != nil {
		t.Fatal(err)
	}
	return fd.Messages().ByName("Req")
}

func jsonName(s string) string {
	parts := strings.Split(s, "_")
	for i := 1; i < len(parts); i++ {
		parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
	}
	return strings.Join(parts, "")
}

var testSchema = Schema{
	"user_id":          Text(1, 64),
	"items":            Items(1, 3),
	"items.product_id": Text(1, 64),
	"items.quantity":   Int(1, 10000),
	"items.unit_price": Int(0, 1_000_000_000),
	"size":             Int(0, 100),
}

func TestDecodeBody(t *testing.T) {
	md := testReq(t)
	in := New(Options{MaxBody: 1024}, Schemas{md.FullName(): testSchema})
	ok := `{"user_id":"u1","items":[{"product_id":"p1","quantity":2,"unit_price":"5"}]}`
	tests := []struct {
		name, ct, body string
		code           int32
		reason, field  string
		inMessage      string
	}{
		{"valid", "application/json", ok, 0, "", "", ""},
		{"valid with charset", "application/json; charset=utf-8", ok, 0, "", "", ""},
		{"no content type is JSON", "", ok, 0, "", "", ""},
		{"camelCase names", "", `{"userId":"u1","items":[{"productId":"p","quantity":1}]}`, 0, "", "", ""},
		{"empty body is an empty object", "", ``, 0, "", "", ""},
		{"1e2 is a whole number", "", `{"items":[{"quantity":1e2}]}`, 0, "", "", ""},
		{"form", "application/x-www-form-urlencoded", ok, 415, ReasonUnsupportedMediaType, "", "application/json"},
		{"text", "text/plain", ok, 415, ReasonUnsupportedMediaType, "", "text/plain"},
		{"bad media type", "%%%", ok, 415, ReasonUnsupportedMediaType, "", "not supported"},
		{"truncated", "", `{"user_id":`, 400, ReasonMalformedBody, "", "not valid JSON"},
		{"garbage", "", `hello`, 400, ReasonMalformedBody, "", "at byte"},
		{"trailing data", "", `{} {}`, 400, ReasonMalformedBody, "", "after the JSON value"},
		{"array body", "", `[1]`, 400, ReasonMalformedBody, "", "must be a JSON object, got an array"},
		{"invalid utf-8", "", "{\"user_id\":\"\xff\"}", 400, ReasonMalformedBody, "", "UTF-8"},
		{"unknown field", "", `{"user":"u1"}`, 400, ReasonInvalidArgument, "user", "unknown field"},
		{"nested unknown field", "", `{"items":[{"qty":1}]}`, 400, ReasonInvalidArgument, "items[0].qty", "unknown field"},
		{"string for string", "", `{"user_id":5}`, 400, ReasonInvalidArgument, "user_id", "must be a string, got a number"},
		{"items not array", "", `{"items":{}}`, 400, ReasonInvalidArgument, "items", "must be an array"},
		{"too many items", "", `{"items":[{},{},{},{}]}`, 400, ReasonInvalidArgument, "items", "1 to 3 entries"},
		{"int32 overflow", "", `{"items":[{"quantity":99999999999}]}`, 400, ReasonInvalidArgument, "items[0].quantity", "from 1 to 10000, got 99999999999"},
		{"fraction", "", `{"items":[{"quantity":1.5}]}`, 400, ReasonInvalidArgument, "items[0].quantity", "whole number"},
		{"quantity as word", "", `{"items":[{"quantity":"two"}]}`, 400, ReasonInvalidArgument, "items[0].quantity", `got "two"`},
		{"quantity as bool", "", `{"items":[{"quantity":true}]}`, 400, ReasonInvalidArgument, "items[0].quantity", "got true/false"},
		{"int64 overflow", "", `{"items":[{"unit_price":1e30}]}`, 400, ReasonInvalidArgument, "items[0].unit_price", "0 to 1000000000"},
		{"uint negative", "", `{"size":-1}`, 400, ReasonInvalidArgument, "size", "from 0 to 100"},
		{"bool", "", `{"flag":"yes"}`, 400, ReasonInvalidArgument, "flag", "true or false"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/x", strings.NewReader(tt.body))
			if tt.ct != "" {
				r.Header.Set("Content-Type", tt.ct)
			}
			m := dynamicpb.NewMessage(md)
			err := in.decodeBody(r, m)
			if tt.code == 0 {
				if err != nil {
					t.Fatalf("decode: %v", err)
				}
				return
			}
			se := errors.FromError(err)
			if se.Code != tt.code || se.Reason != tt.reason || se.Metadata["field"] != tt.field || !strings.Contains(se.Message, tt.inMessage) {
				t.Fatalf("got %d %s field=%q %q; want %d %s field=%q containing %q", se.Code, se.Reason, se.Metadata["field"], se.Message,
					tt.code, tt.reason, tt.field, tt.inMessage)
			}
			for _, jargon := range []string{"proto", "int32", "int64", "unmarshal", "syntax error"} {
				if strings.Contains(strings.ToLower(se.Message), jargon) {
					t.Errorf("message %q has jargon %q", se.Message, jargon)
				}
			}
		})
	}
}

func TestSchemaCheck(t *testing.T) {
	md := testReq(t)
	build := func(js string) proto.Message {
		m := dynamicpb.NewMessage(md)
		in := New(Options{}, nil)
		if err := in.decodeBody(httptest.NewRequest(http.MethodPost, "/", strings.NewReader(js)), m); err != nil {
			t.Fatalf("decode %s: %v", js, err)
		}
		return m
	}
	long := strings.Repeat("x", 65)
	tests := []struct {
		name, body, field, inMessage string
	}{
		{"valid", `{"user_id":"u1","items":[{"product_id":"p1","quantity":1}]}`, "", ""},
		{"64 bytes is fine", `{"user_id":"` + long[:64] + `","items":[{"product_id":"p1","quantity":10000}]}`, "", ""},
		{"missing user", `{"items":[{"product_id":"p1","quantity":1}]}`, "user_id", "is required"},
		{"long user", `{"user_id":"` + long + `","items":[{"product_id":"p1","quantity":1}]}`, "user_id", "1 to 64 bytes, got 65"},
		{"multibyte counts bytes", `{"user_id":"` + strings.Repeat("é", 33) + `","items":[{"product_id":"p1","quantity":1}]}`, "user_id", "got 66 bytes"},
		{"no items", `{"user_id":"u1"}`, "items", "1 to 3 entries, got 0"},
		{"zero quantity", `{"user_id":"u1","items":[{"product_id":"p1","quantity":0}]}`, "items[0].quantity", "is required"},
		{"negative quantity", `{"user_id":"u1","items":[{"product_id":"p1","quantity":-1}]}`, "items[0].quantity", "got -1"},
		{"1e6 quantity", `{"user_id":"u1","items":[{"product_id":"p1","quantity":1e6}]}`, "items[0].quantity", "from 1 to 10000, got 1000000"},
		{"second item", `{"user_id":"u1","items":[{"product_id":"p1","quantity":1},{"product_id":"` + long + `","quantity":1}]}`, "items[1].product_id", "got 65 bytes"},
		{"negative price", `{"user_id":"u1","items":[{"product_id":"p1","quantity":1,"unit_price":-5}]}`, "items[0].unit_price", "got -5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := testSchema.Check(build(tt.body))
			if tt.field == "" {
				if err != nil {
					t.Fatalf("check: %v", err)
				}
				return
			}
			se := errors.FromError(err)
			if se.Code != 400 || se.Reason != ReasonInvalidArgument || se.Metadata["field"] != tt.field || !strings.Contains(se.Message, tt.inMessage) {
				t.Fatalf("got %d %s field=%q %q; want field %q containing %q", se.Code, se.Reason, se.Metadata["field"], se.Message, tt.field, tt.inMessage)
			}
			if !strings.HasPrefix(se.Message, tt.field+": ") {
				t.Errorf("message %q does not start with the field", se.Message)
			}
		})
	}
}

func TestCheckValues(t *testing.T) {
	md := testReq(t)
	tests := []struct {
		name  string
		vals  map[string][]string
		field string
	}{
		{"valid", map[string][]string{"size": {"10"}, "user_id": {"u"}}, ""},
		{"unknown ignored", map[string][]string{"other": {"x"}}, ""},
		{"not a number", map[string][]string{"size": {"ten"}}, "size"},
		{"negative uint", map[string][]string{"size": {"-3"}}, "size"},
		{"repeated scalar", map[string][]string{"size": {"1", "2"}}, "size"},
		{"bool", map[string][]string{"flag": {"maybe"}}, "flag"},
		{"exponent", map[string][]string{"size": {"1e1"}}, "size"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkValues(tt.vals, md, testSchema)
			if got := fieldOf(err); (err == nil) != (tt.field == "") || got != tt.field {
				t.Fatalf("err %v, field %q; want field %q", err, got, tt.field)
			}
		})
	}
}

func TestLimitAndEncode(t *testing.T) {
	var logged bytes.Buffer
	in := New(Options{MaxBody: 16, Logger: testLogger(&logged)}, nil)
	read := in.limitBody(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var v map[string]any
		if err := in.decodeBody(r, &v); err != nil {
			in.EncodeError(w, r, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	tests := []struct {
		name   string
		body   io.Reader
		length int64
		code   int
		reason string
	}{
		{"small", strings.NewReader(`{"a":1}`), -1, 204, ""},
		{"declared too large", strings.NewReader(strings.Repeat(" ", 17)), 17, 413, ReasonBodyTooLarge},
		{"chunked too large", io.MultiReader(strings.NewReader(`{"a":"`), strings.NewReader(strings.Repeat("x", 100))), -1, 413, ReasonBodyTooLarge},
		{"unknown field of a Go struct", strings.NewReader(`{"a":1}`), -1, 204, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/x", tt.body)
			r.ContentLength = tt.length
			w := httptest.NewRecorder()
			read.ServeHTTP(w, r)
			if w.Code != tt.code {
				t.Fatalf("status %d, want %d: %s", w.Code, tt.code, w.Body)
			}
			if tt.reason == "" {
				return
			}
			var body errorBody
			if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || body.Reason != tt.reason || body.Code != int32(tt.code) ||
				body.Metadata["limit"] != "16" || !strings.Contains(body.Message, "16 bytes") {
				t.Fatalf("body %s (%v)", w.Body, err)
			}
		})
	}
	if !strings.Contains(logged.String(), "request refused") || !strings.Contains(logged.String(), ReasonBodyTooLarge) {
		t.Errorf("refusals not logged: %s", logged.String())
	}
}

func TestEncodeErrorHidesInternalText(t *testing.T) {
	var logged bytes.Buffer
	in := New(Options{Logger: testLogger(&logged)}, nil)
	w := httptest.NewRecorder()
	in.EncodeError(w, httptest.NewRequest(http.MethodGet, "/x", nil), io.ErrUnexpectedEOF)
	var body errorBody
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
		t.Fatal(err)
	}
	if w.Code != 500 || body.Reason != ReasonInternal || strings.Contains(body.Message, "EOF") {
		t.Fatalf("%d %+v", w.Code, body)
	}
	if !strings.Contains(logged.String(), "unexpected EOF") {
		t.Errorf("cause not logged: %s", logged.String())
	}
	// A Kratos error keeps its reason and message.
	w = httptest.NewRecorder()
	in.EncodeError(w, httptest.NewRequest(http.MethodGet, "/x", nil), errors.NotFound("ORDER_NOT_FOUND", "order not found"))
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || w.Code != 404 || body.Reason != "ORDER_NOT_FOUND" || body.Message != "order not found" {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
}

func TestMiddleware(t *testing.T) {
	md := testReq(t)
	in := New(Options{}, Schemas{md.FullName(): testSchema})
	called := false
	h := in.Middleware()(func(ctx context.Context, req any) (any, error) { called = true; return nil, nil })
	m := dynamicpb.NewMessage(md)
	if _, err := h(context.Background(), m); fieldOf(err) != "user_id" || called {
		t.Fatalf("empty request: %v (called %v)", err, called)
	}
	m.Set(md.Fields().ByName("user_id"), protoreflect.ValueOfString("u"))
	items := m.Mutable(md.Fields().ByName("items")).List()
	it := items.NewElement()
	it.Message().Set(md.Fields().ByName("items").Message().Fields().ByName("product_id"), protoreflect.ValueOfString("p"))
	it.Message().Set(md.Fields().ByName("items").Message().Fields().ByName("quantity"), protoreflect.ValueOfInt32(1))
	items.Append(it)
	if _, err := h(context.Background(), m); err != nil || !called {
		t.Fatalf("valid request: %v (called %v)", err, called)
	}
	if _, err := h(context.Background(), "not a message"); err != nil {
		t.Fatalf("other request types pass: %v", err)
	}
}

func fieldOf(err error) string {
	if err == nil {
		return ""
	}
	return errors.FromError(err).Metadata["field"]
}

func TestDecodeJSON(t *testing.T) {
	type body struct {
		DryRun bool `json:"dry_run"`
		Limit  int  `json:"limit"`
	}
	tests := []struct {
		name, ct, body string
		code           int32
		reason, field  string
	}{
		{"empty", "", "", 0, "", ""},
		{"valid", "application/json", `{"dry_run":true,"limit":3}`, 0, "", ""},
		{"form", "application/x-www-form-urlencoded", `{"dry_run":true}`, 415, ReasonUnsupportedMediaType, ""},
		{"malformed", "", `{"dry_run":`, 400, ReasonMalformedBody, ""},
		{"trailing", "", `{} x`, 400, ReasonMalformedBody, ""},
		{"array", "", `[]`, 400, ReasonMalformedBody, ""},
		{"wrong type", "", `{"dry_run":"yes"}`, 400, ReasonInvalidArgument, "dry_run"},
		{"overflow", "", `{"limit":99999999999999999999}`, 400, ReasonInvalidArgument, "limit"},
		{"unknown", "", `{"dryrun":true}`, 400, ReasonInvalidArgument, "dryrun"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(tt.body))
			if tt.ct != "" {
				r.Header.Set("Content-Type", tt.ct)
			}
			var b body
			err := DecodeJSON(r, &b)
			if tt.code == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			se := errors.FromError(err)
			if se.Code != tt.code || se.Reason != tt.reason || se.Metadata["field"] != tt.field {
				t.Fatalf("got %d %s field=%q %q", se.Code, se.Reason, se.Metadata["field"], se.Message)
			}
		})
	}
}

func TestQueryInt(t *testing.T) {
	tests := []struct {
		query string
		want  int64
		field string
	}{
		{"", 50, ""}, {"limit=7", 7, ""}, {"limit=0", 0, "limit"}, {"limit=501", 0, "limit"},
		{"limit=-1", 0, "limit"}, {"limit=1e3", 0, "limit"}, {"limit=ten", 0, "limit"}, {"limit=1&limit=2", 0, "limit"},
		{"limit=99999999999999999999", 0, "limit"},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			n, err := QueryInt(httptest.NewRequest(http.MethodGet, "/?"+tt.query, nil), "limit", 1, 500, 50)
			if fieldOf(err) != tt.field || (err == nil && n != tt.want) {
				t.Fatalf("got %d, %v; want %d field %q", n, err, tt.want, tt.field)
			}
		})
	}
}
