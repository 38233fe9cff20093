package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
)

// topFiles are the documents at the repository root that doccheck checks
// when no file is named.
var topFiles = []string{"README.md", "OPERATIONS.md", "COMPARISON.md"}

// docsPages matches the pages of docs/, checked with topFiles when no file
// is named.
const docsPages = "docs/*.md"

// defaultFiles returns the documents checked when none is named: topFiles,
// then every page docsPages matches under root, sorted, as paths relative
// to root. No page at all is an error: a moved or renamed docs/ would
// otherwise leave its commands unchecked without a word.
func defaultFiles(root string) ([]string, error) {
	pages, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(docsPages)))
	if err != nil {
		return nil, err
	}
	if len(pages) == 0 {
		return nil, errors.New("no page matches " + docsPages + " under " + root)
	}
	files := slices.Clone(topFiles)
	slices.Sort(pages)
	for _, p := range pages {
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		files = append(files, filepath.ToSlash(rel))
	}
	return files, nil
}
