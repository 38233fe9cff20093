package benchmarks

import "strings"

// CommandLine quotes a run's command for a report: program followed by
// args, with the value of any -postgres flag replaced by '<dsn>' so that no
// password reaches a file.
func CommandLine(program string, args []string) string {
	out := []string{program}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-postgres" || a == "--postgres":
			out = append(out, a, "'<dsn>'")
			i++
		case strings.HasPrefix(a, "-postgres=") || strings.HasPrefix(a, "--postgres="):
			out = append(out, "-postgres='<dsn>'")
		default:
			out = append(out, a)
		}
	}
	return strings.Join(out, " ")
}
