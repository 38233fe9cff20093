package main

import (
	"bufio"
	"io"
	"strings"
)

// A block is one code block of a Markdown file: its lines, each with the
// line number it has in the file.
type block struct {
	file  string
	lines []line
}

type line struct {
	n    int // 1-based line number in the file
	text string
}

// shellInfo are the info strings of fenced blocks that may hold commands;
// a block with another one (go, text, …) is not read.
var shellInfo = map[string]bool{"": true, "sh": true, "bash": true, "shell": true, "console": true, "zsh": true}

// blocks returns the code blocks of a Markdown file that may hold shell
// commands: fenced blocks (``` or ~~~) whose info string is empty or names
// a shell, and indented blocks (four spaces or a tab, after a blank line).
// Lines ending in a backslash are joined with the next one; a console
// block's "$ " prompt is dropped.
func blocks(file string, r io.Reader) ([]block, error) {
	var (
		out      []block
		cur      *block
		fence    string // the open fence, "" outside a fenced block
		wanted   bool   // whether the open fenced block is read
		indented bool   // inside an indented block
		prevBlnk = true
		pending  *line // a line continued with a backslash
	)
	add := func(n int, text string) {
		if pending != nil {
			pending.text += " " + strings.TrimSpace(text)
		} else {
			pending = &line{n: n, text: text}
		}
		if strings.HasSuffix(pending.text, `\`) {
			pending.text = strings.TrimSuffix(pending.text, `\`)
			return
		}
		pending.text = strings.TrimPrefix(strings.TrimSpace(pending.text), "$ ")
		cur.lines = append(cur.lines, *pending)
		pending = nil
	}
	closeBlock := func() {
		if pending != nil {
			cur.lines = append(cur.lines, *pending)
			pending = nil
		}
		if cur != nil && len(cur.lines) > 0 {
			out = append(out, *cur)
		}
		cur = nil
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for n := 1; sc.Scan(); n++ {
		text := sc.Text()
		trimmed := strings.TrimSpace(text)
		switch {
		case fence != "":
			if strings.HasPrefix(trimmed, fence) && strings.Trim(trimmed, fence[:1]) == "" {
				if wanted {
					closeBlock()
				}
				fence = ""
			} else if wanted {
				add(n, text)
			}
		case strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~"):
			if indented {
				closeBlock()
				indented = false
			}
			fence = trimmed[:3]
			info := strings.TrimSpace(strings.TrimLeft(trimmed, fence[:1]))
			if i := strings.IndexAny(info, " \t{"); i >= 0 {
				info = info[:i]
			}
			wanted = shellInfo[strings.ToLower(info)]
			if wanted {
				cur = &block{file: file}
			}
		case indented && (trimmed == "" || isIndented(text)):
			if trimmed != "" {
				add(n, text)
			}
		case isIndented(text) && prevBlnk:
			indented = true
			cur = &block{file: file}
			add(n, text)
		default:
			if indented {
				closeBlock()
				indented = false
			}
		}
		prevBlnk = trimmed == ""
	}
	if indented || (fence != "" && wanted) {
		closeBlock()
	}
	return out, sc.Err()
}

func isIndented(s string) bool {
	return strings.HasPrefix(s, "    ") || strings.HasPrefix(s, "\t")
}
