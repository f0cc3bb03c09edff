package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
)

// header is one type to generate.
type header struct {
	name     string
	fields   []field
	validate bool // the type has a validate() error method
	append   bool // generate AppendBinaryExt ("append" or "typed")
	typed    bool // generate setExt and typedDone ("typed")
}

// field is one wire field of a header.
type field struct {
	path     string // Go selector from the receiver: "X" or "Embedded.X"
	key      string // ext key
	kind     string // string, bool, int32 or int64
	conv     string // named type to convert to on decode, "" for none
	required bool
	omit     string // omitempty, positive, nullneg, nullid or ""
	def      string // Go expression an absent int64 decodes as, "" for 0
}

// pkg is what the generator knows of package protocol.
type pkg struct {
	types   map[string]*ast.TypeSpec
	methods map[string]bool // "Type.method"
	codecs  []codec         // in file, then declaration order
}

type codec struct {
	spec                 *ast.TypeSpec
	short, append, typed bool
	err                  error // an unknown directive word
}

// load parses the non-test Go files of dir, except skip.
func load(dir, skip string) (*pkg, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	p := &pkg{types: map[string]*ast.TypeSpec{}, methods: map[string]bool{}}
	fset := token.NewFileSet()
	for _, e := range entries { // sorted by name
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") || n == skip {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		p.addFile(f)
	}
	return p, nil
}

func (p *pkg) addFile(f *ast.File) {
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv != nil && len(d.Recv.List) == 1 {
				p.methods[recvName(d.Recv.List[0].Type)+"."+d.Name.Name] = true
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				ts, ok := s.(*ast.TypeSpec)
				if !ok {
					continue
				}
				p.types[ts.Name.Name] = ts
				doc := ts.Doc
				if doc == nil && len(d.Specs) == 1 {
					doc = d.Doc
				}
				if c, ok := directive(doc); ok {
					c.spec = ts
					p.codecs = append(p.codecs, c)
				}
			}
		}
	}
}

func recvName(e ast.Expr) string {
	if s, ok := e.(*ast.StarExpr); ok {
		e = s.X
	}
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// directive reports whether doc holds //rmq:codec, and its words:
// short, append, typed (typed implies append).
func directive(doc *ast.CommentGroup) (codec, bool) {
	var c codec
	if doc == nil {
		return c, false
	}
	for _, l := range doc.List {
		rest, found := strings.CutPrefix(l.Text, "//rmq:codec")
		if !found || rest != "" && rest[0] != ' ' {
			continue
		}
		for _, w := range strings.Fields(rest) {
			switch w {
			case "short":
				c.short = true
			case "append":
				c.append = true
			case "typed":
				c.append, c.typed = true, true
			default:
				c.err = fmt.Errorf("unknown //rmq:codec word %q", w)
			}
		}
		return c, true
	}
	return c, false
}

// headers builds the model of every //rmq:codec type.
func (p *pkg) headers() ([]header, error) {
	var hs []header
	for _, c := range p.codecs {
		name := c.spec.Name.Name
		if c.err != nil {
			return nil, fmt.Errorf("%s: %w", name, c.err)
		}
		st, err := p.structOf(c.spec)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		fs, err := p.fields(st, "", c.short)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if len(fs) == 0 {
			return nil, fmt.Errorf("%s: no fields", name)
		}
		if c.typed && len(fs) > 64 {
			return nil, fmt.Errorf("%s: typed decoding takes at most 64 fields, not %d", name, len(fs))
		}
		hs = append(hs, header{name: name, fields: fs, validate: p.methods[name+".validate"], append: c.append, typed: c.typed})
	}
	return hs, nil
}

// structOf returns the struct of ts, following "type A B" to B's struct.
func (p *pkg) structOf(ts *ast.TypeSpec) (*ast.StructType, error) {
	for range 8 {
		switch t := ts.Type.(type) {
		case *ast.StructType:
			return t, nil
		case *ast.Ident:
			next, ok := p.types[t.Name]
			if !ok {
				return nil, fmt.Errorf("type %s is not a struct of the package", t.Name)
			}
			ts = next
		default:
			return nil, fmt.Errorf("not a struct type")
		}
	}
	return nil, fmt.Errorf("type chain too long")
}

// fields lists the wire fields of st; prefix is the selector of an
// embedded struct.
func (p *pkg) fields(st *ast.StructType, prefix string, short bool) ([]field, error) {
	var fs []field
	for _, f := range st.Fields.List {
		if len(f.Names) == 0 { // embedded
			id, ok := f.Type.(*ast.Ident)
			if !ok || p.types[id.Name] == nil {
				return nil, fmt.Errorf("embedded field %s: not a struct of the package", exprString(f.Type))
			}
			est, err := p.structOf(p.types[id.Name])
			if err != nil {
				return nil, fmt.Errorf("embedded %s: %w", id.Name, err)
			}
			sub, err := p.fields(est, prefix+id.Name+".", short)
			if err != nil {
				return nil, err
			}
			fs = append(fs, sub...)
			continue
		}
		for _, n := range f.Names {
			fd, err := p.field(f, prefix+n.Name, short)
			if err != nil {
				return nil, fmt.Errorf("field %s: %w", n.Name, err)
			}
			fs = append(fs, fd)
		}
	}
	return fs, nil
}

var basicKinds = []string{"string", "bool", "int32", "int64"}

// field reads one field's tag and type.
func (p *pkg) field(f *ast.Field, path string, short bool) (field, error) {
	fd := field{path: path}
	id, ok := f.Type.(*ast.Ident)
	if !ok {
		return fd, fmt.Errorf("unsupported type %s", exprString(f.Type))
	}
	fd.kind = id.Name
	if !slices.Contains(basicKinds, id.Name) {
		under := p.underlying(id.Name)
		if under == "" {
			return fd, fmt.Errorf("unsupported type %s", id.Name)
		}
		fd.kind, fd.conv = under, id.Name
	}
	if f.Tag == nil {
		return fd, fmt.Errorf("no rmq tag")
	}
	tag, ok := reflect.StructTag(strings.Trim(f.Tag.Value, "`")).Lookup("rmq")
	if !ok || tag == "" {
		return fd, fmt.Errorf("no rmq tag")
	}
	return fd, fd.parseTag(tag, short)
}

func (fd *field) parseTag(tag string, short bool) error {
	parts := strings.Split(tag, ",")
	fd.key = parts[0]
	shortKey := ""
	for _, o := range parts[1:] {
		switch {
		case o == "required":
			fd.required = true
		case o == "omitempty" || o == "positive" || o == "nullneg" || o == "nullid":
			if fd.omit != "" {
				return fmt.Errorf("options %s and %s exclude each other", fd.omit, o)
			}
			fd.omit = o
		case strings.HasPrefix(o, "default="):
			fd.def = strings.TrimPrefix(o, "default=")
		case strings.HasPrefix(o, "short="):
			shortKey = strings.TrimPrefix(o, "short=")
		default:
			return fmt.Errorf("unknown rmq option %q", o)
		}
	}
	if short {
		if shortKey == "" {
			return fmt.Errorf("no short= name for a short codec")
		}
		fd.key = shortKey
	}
	if fd.key == "" {
		return fmt.Errorf("empty wire name")
	}
	return fd.check()
}

// check rejects options that do not fit the field's kind.
func (fd *field) check() error {
	isInt := fd.kind == "int32" || fd.kind == "int64"
	switch {
	case fd.omit == "positive" && !isInt, fd.omit == "nullneg" && !isInt:
		return fmt.Errorf("%s needs an integer field", fd.omit)
	case fd.omit == "nullid" && fd.kind != "int64":
		return fmt.Errorf("nullid needs an int64 field")
	case fd.required && fd.omit != "":
		return fmt.Errorf("required and %s exclude each other", fd.omit)
	case fd.def != "" && (fd.kind != "int64" || fd.required || fd.omit == "nullneg" || fd.omit == "nullid"):
		return fmt.Errorf("default= needs an optional int64 field without nullneg or nullid")
	}
	return nil
}

// underlying returns the basic type a named type of the package is
// defined as, or "".
func (p *pkg) underlying(name string) string {
	ts, ok := p.types[name]
	if !ok {
		return ""
	}
	if id, ok := ts.Type.(*ast.Ident); ok && slices.Contains(basicKinds, id.Name) {
		return id.Name
	}
	return ""
}

func exprString(e ast.Expr) string { return types.ExprString(e) }
