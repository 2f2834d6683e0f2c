package schema

import (
	"embed"
	"io/fs"
	"sort"
)

//go:embed *.sql
var files embed.FS

// File is one embedded schema file.
type File struct {
	Name string
	SQL  string
}

// Files returns the schema files in the order they must be applied.
func Files() []File {
	names, _ := fs.Glob(files, "*.sql")
	sort.Strings(names)
	out := make([]File, 0, len(names))
	for _, n := range names {
		b, _ := files.ReadFile(n)
		out = append(out, File{Name: n, SQL: string(b)})
	}
	return out
}
