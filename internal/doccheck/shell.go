package main

import (
	"errors"
	"fmt"
	"strings"
)

// The shell that doccheck reads is the small part of sh that the documents
// use: words with '…', "…" and \ quoting; the operators && || ; & | and
// ( … ) subshells; VAR=value prefixes; # comments. Anything else (redirections,
// $(…), here-documents) is an error, so that a command the check cannot
// follow is reported instead of being passed over.

// A token is a word or an operator.
type token struct {
	word string
	op   string // "&&", "||", ";", "&", "|", "(", ")"; "" for a word
}

// tokenize splits one line of shell into tokens and returns the comment
// that ends it, if any (without the #).
func tokenize(s string) (toks []token, comment string, err error) {
	var (
		b      strings.Builder
		inWord bool
	)
	flush := func() {
		if inWord {
			toks = append(toks, token{word: b.String()})
			b.Reset()
			inWord = false
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			flush()
		case c == '#' && !inWord:
			return toks, strings.TrimSpace(s[i+1:]), nil
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, "", errors.New("unterminated '")
			}
			b.WriteString(s[i+1 : i+1+j])
			inWord = true
			i += j + 1
		case c == '"':
			inWord = true
			for i++; ; i++ {
				if i >= len(s) {
					return nil, "", errors.New(`unterminated "`)
				}
				if s[i] == '"' {
					break
				}
				if s[i] == '$' || s[i] == '`' {
					return nil, "", fmt.Errorf("%c inside \"…\" is not supported", s[i])
				}
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0 {
					i++
				}
				b.WriteByte(s[i])
			}
		case c == '\\':
			if i+1 < len(s) {
				i++
				b.WriteByte(s[i])
				inWord = true
			}
		case c == '&' || c == '|':
			flush()
			if i+1 < len(s) && s[i+1] == c {
				toks = append(toks, token{op: string([]byte{c, c})})
				i++
			} else {
				toks = append(toks, token{op: string(c)})
			}
		case c == ';' || c == '(' || c == ')':
			flush()
			toks = append(toks, token{op: string(c)})
		case c == '<' || c == '>' || c == '$' || c == '`':
			return nil, "", fmt.Errorf("%c is not supported", c)
		default:
			b.WriteByte(c)
			inWord = true
		}
	}
	flush()
	return toks, "", nil
}

// A node is a simple command or a subshell, run one after the other: the
// documents' && chains and & backgrounds alike are checked in order, each
// part on its own.
type node struct {
	assign []string // VAR=value before the command
	args   []string // the command's words; nil for a subshell
	sub    []node   // the subshell's commands
}

// parse reads a line of shell into the commands it runs, in order.
func parse(s string) ([]node, string, error) {
	toks, comment, err := tokenize(s)
	if err != nil {
		return nil, "", err
	}
	nodes, rest, err := parseList(toks)
	if err != nil {
		return nil, "", err
	}
	if len(rest) > 0 {
		return nil, "", fmt.Errorf("unexpected %q", rest[0].op)
	}
	return nodes, comment, nil
}

func parseList(toks []token) ([]node, []token, error) {
	var nodes []node
	for len(toks) > 0 {
		t := toks[0]
		switch t.op {
		case "":
			var n node
			for len(toks) > 0 && toks[0].op == "" {
				w := toks[0].word
				if n.args == nil && isAssignment(w) {
					n.assign = append(n.assign, w)
				} else {
					n.args = append(n.args, w)
				}
				toks = toks[1:]
			}
			nodes = append(nodes, n)
		case "(":
			sub, rest, err := parseList(toks[1:])
			if err != nil {
				return nil, nil, err
			}
			if len(rest) == 0 || rest[0].op != ")" {
				return nil, nil, errors.New("unbalanced (")
			}
			nodes = append(nodes, node{sub: sub})
			toks = rest[1:]
		case ")":
			return nodes, toks, nil
		default: // && || ; & |
			toks = toks[1:]
		}
	}
	return nodes, nil, nil
}

// isAssignment reports whether w is a shell variable assignment, NAME=value.
func isAssignment(w string) bool {
	i := strings.IndexByte(w, '=')
	if i <= 0 {
		return false
	}
	for j, c := range w[:i] {
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || j > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
