package colossus

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// Every exported name of the package and of colossustest has a doc comment (godoc is the
// reference): each type, func and method of an exported type, each field (embedded ones
// included) and interface method of an exported type, and each const and var. A trailing
// line comment counts for a field or a value. The go_lint session runs this test too.
func TestEveryExportedNameIsDocumented(t *testing.T) {
	fset := token.NewFileSet()
	var paths []string
	for _, pattern := range []string{"*.go", "colossustest/*.go"} {
		matched, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, matched...)
	}
	var files []*ast.File
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	missing := 0
	report := func(pos token.Pos, name string) {
		missing++
		t.Errorf("%s: %s has no doc comment", fset.Position(pos), name)
	}
	for _, file := range files {
		for _, decl := range file.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if d.Name.IsExported() && d.Doc == nil && (d.Recv == nil || receiverExported(d.Recv)) {
					report(d.Pos(), d.Name.Name)
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch s := spec.(type) {
					case *ast.TypeSpec:
						if !s.Name.IsExported() {
							continue
						}
						if s.Doc == nil && d.Doc == nil {
							report(s.Pos(), s.Name.Name)
						}
						for _, m := range members(s.Type) {
							if m.Doc != nil || m.Comment != nil {
								continue
							}
							if len(m.Names) == 0 {
								report(m.Pos(), "an embedded field of "+s.Name.Name)
							}
							for _, n := range m.Names {
								if n.IsExported() {
									report(n.Pos(), s.Name.Name+"."+n.Name)
								}
							}
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							// A grouped block's comment documents its members.
							if n.IsExported() && s.Doc == nil && s.Comment == nil && d.Doc == nil {
								report(n.Pos(), n.Name)
							}
						}
					}
				}
			}
		}
	}
	if missing > 0 {
		t.Fatalf("%d exported names without doc comments", missing)
	}
}

func receiverExported(list *ast.FieldList) bool {
	typ := list.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	id, ok := typ.(*ast.Ident)
	return ok && id.IsExported()
}

// members are the fields of a struct type or the methods of an interface type.
func members(typ ast.Expr) []*ast.Field {
	switch x := typ.(type) {
	case *ast.StructType:
		return x.Fields.List
	case *ast.InterfaceType:
		return x.Methods.List
	}
	return nil
}
