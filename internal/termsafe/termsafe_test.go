package termsafe

import (
	"bytes"
	"testing"
)

func TestWriterEscapesControlBytes(t *testing.T) {
	for in, want := range map[string]string{
		"plain\tcolumns\n":             "plain\tcolumns\n",
		"évian ✓\n":                    "évian ✓\n",
		"name\x1b]0;pwned\x07\n":       `name\x1b]0;pwned\x07` + "\n",
		"a\rb\x08c\x00d\x7f":           `a\x0db\x08c\x00d\x7f`,
		"csi\u009b2J and \xff invalid": `csi\u009b2J and \xff invalid`,
		"line\u2028separator":          `line\u2028separator`,
	} {
		var b bytes.Buffer
		n, err := NewWriter(&b).Write([]byte(in))
		if err != nil || n != len(in) {
			t.Errorf("Write(%q) = %d, %v; want %d, nil", in, n, err, len(in))
		}
		if b.String() != want {
			t.Errorf("Write(%q) wrote %q, want %q", in, b.String(), want)
		}
	}
}
