package scenarios

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// Size limits. A scenario file is parsed whole into memory; the limit keeps
// an accidental 50 MB log named .yaml from taking the server's memory.
const (
	MaxFileSize     = 16 << 20
	MaxBodyFileSize = 64 << 20
)

// Load reads the scenario files at paths, validates them and returns the
// set. A path is a file, or a directory whose *.yaml and *.yml files are
// read recursively in lexical order (names starting with "." are skipped:
// editor swap files, Kubernetes' ..data links). Every problem found is
// returned, joined; each is an *Error with file:line:col.
func Load(paths ...string) (*Set, error) {
	if len(paths) == 0 {
		return nil, errors.New("no scenario files given")
	}
	l := newLoader()
	for _, p := range paths {
		l.loadPath(p)
	}
	return l.finish()
}

// LoadBytes reads one scenario file held in memory, such as the built-in
// demo; name is used in messages. bodyFile is not available.
func LoadBytes(name string, data []byte) (*Set, error) {
	l := newLoader()
	l.parse(name, data, "", "")
	return l.finish()
}

// Files lists the scenario files Load would read for paths, in order, and
// the directories it would search; the watcher uses both.
func Files(paths ...string) (files, dirs []string, err error) {
	for _, p := range paths {
		info, statErr := os.Stat(p)
		if statErr != nil {
			err = errors.Join(err, statErr)
			continue
		}
		if !info.IsDir() {
			files = append(files, p)
			continue
		}
		f, d, walkErr := walk(p)
		files, dirs = append(files, f...), append(dirs, d...)
		err = errors.Join(err, walkErr)
	}
	return files, dirs, err
}

type loader struct {
	set         *Set
	errs        []*Error
	names       []nameAt // every route name written, in load order
	hash        hash.Hash
	fallbackPos Pos
}

func newLoader() *loader {
	return &loader{set: &Set{}, hash: sha256.New()}
}

func (l *loader) failf(pos Pos, format string, args ...any) {
	l.errs = append(l.errs, &Error{Pos: pos, Msg: fmt.Sprintf(format, args...)})
}

func (l *loader) loadPath(p string) {
	info, err := os.Stat(p)
	if err != nil {
		l.failf(Pos{File: p}, "%s", osMessage(err))
		return
	}
	if !info.IsDir() {
		l.loadFile(p, filepath.Dir(p), false)
		return
	}
	files, _, err := walk(p)
	if err != nil {
		l.failf(Pos{File: p}, "%s", osMessage(err))
	}
	if len(files) == 0 && err == nil {
		l.failf(Pos{File: p}, "no *.yaml or *.yml files in this directory")
	}
	for _, f := range files {
		l.loadFile(f, p, true)
	}
}

// walk lists the scenario files below dir in lexical order of their paths,
// and the directories searched.
func walk(dir string) (files, dirs []string, err error) {
	err = filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			if path == dir {
				return err
			}
			return nil // vanished or unreadable below the root: the next event reloads
		}
		if path != dir && strings.HasPrefix(e.Name(), ".") {
			if e.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if e.IsDir() {
			dirs = append(dirs, path)
			return nil
		}
		if isScenarioName(e.Name()) {
			files = append(files, path)
		}
		return nil
	})
	sort.Slice(files, func(i, j int) bool { return filepath.ToSlash(files[i]) < filepath.ToSlash(files[j]) })
	return files, dirs, err
}

func isScenarioName(name string) bool {
	ext := strings.ToLower(filepath.Ext(name))
	return (ext == ".yaml" || ext == ".yml") && !strings.HasPrefix(name, ".")
}

// loadFile reads one scenario file; root bounds its body files. A file
// found by walking a directory that is gone by the time it is read was
// deleted mid-reload: it is skipped, and the deletion's own event reloads.
func (l *loader) loadFile(path, root string, walked bool) {
	f, err := os.Open(path)
	if err != nil {
		if walked && errors.Is(err, fs.ErrNotExist) {
			return
		}
		l.failf(Pos{File: path}, "%s", osMessage(err))
		return
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		l.failf(Pos{File: path}, "%s", osMessage(err))
		return
	}
	if info.IsDir() {
		l.failf(Pos{File: path}, "is a directory, not a scenario file")
		return
	}
	if info.Size() > MaxFileSize {
		l.failf(Pos{File: path}, "the file is %d bytes (%s); a scenario file may be at most %s", info.Size(), size(info.Size()), size(MaxFileSize))
		return
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		l.failf(Pos{File: path}, "%s", osMessage(err))
		return
	}
	if len(data) > MaxFileSize {
		l.failf(Pos{File: path}, "the file grew past %s while being read", size(MaxFileSize))
		return
	}
	l.parse(path, data, filepath.Dir(path), root)
}

// parse decodes one file's bytes into the set. dir is the file's directory
// and root the directory body files must stay within; "" forbids them.
func (l *loader) parse(path string, data []byte, dir, root string) {
	l.hashFile(path, data)
	doc, err := parseYAML(data)
	if err != nil {
		line, col, msg := locateSyntaxError(data, err)
		l.failf(Pos{File: path, Line: line, Col: col}, "%s", msg)
		return
	}
	d := &fileDecoder{decoder: decoder{file: path, budget: nodeBudget, lines: splitLines(data)}}
	d.readBody = func(rel string) ([]byte, string, error) {
		data, msg, err := l.readBody(dir, root, rel)
		d.bodies.Write(data)
		return data, msg, err
	}
	p := d.decodeFile(doc, path)
	l.errs = append(l.errs, d.errs...)
	l.names = append(l.names, d.names...)
	l.set.Files = append(l.set.Files, p.file)
	for _, sd := range p.seeds {
		for _, other := range l.set.Seeds {
			if other.Name == sd.Name {
				l.failf(sd.Pos, "collections: %s is seeded twice (first at %s); seed a collection in one file", strconv.Quote(sd.Name), other.Pos)
			}
		}
		l.set.Seeds = append(l.set.Seeds, sd)
	}
	if p.fallback != nil {
		if l.set.Fallback != nil {
			l.failf(p.fallbackPos, "a second fallback (the first is at %s); only one file may define it", l.fallbackPos)
		} else {
			l.set.Fallback, l.fallbackPos = p.fallback, p.fallbackPos
		}
	}
}

func (l *loader) hashFile(path string, data []byte) {
	fmt.Fprintf(l.hash, "%s\x00%d\x00", path, len(data))
	l.hash.Write(data)
}

// readBody reads a bodyFile named relative to dir, refusing paths that
// leave root, also through symbolic links.
func (l *loader) readBody(dir, root, rel string) ([]byte, string, error) {
	if root == "" {
		err := errors.New("no root")
		return nil, "bodyFile is not available here (the built-in scenario has no directory)", err
	}
	if filepath.IsAbs(rel) {
		return nil, fmt.Sprintf("bodyFile %q must be relative to the scenario file", rel), errors.New("absolute")
	}
	full := filepath.Join(dir, rel)
	outside := fmt.Sprintf("bodyFile %q is outside the scenario root %q", rel, root)
	if !within(root, full) {
		return nil, outside, errors.New("outside")
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, osMessage(err), err
	}
	real, err := filepath.EvalSymlinks(full)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Sprintf("bodyFile %q: no such file (looked for %s)", rel, full), err
		}
		return nil, fmt.Sprintf("bodyFile %q: %s", rel, osMessage(err)), err
	}
	if !within(realRoot, real) {
		return nil, outside + " (through a symbolic link)", errors.New("outside")
	}
	info, err := os.Stat(real)
	if err != nil {
		return nil, fmt.Sprintf("bodyFile %q: %s", rel, osMessage(err)), err
	}
	if info.IsDir() {
		return nil, fmt.Sprintf("bodyFile %q is a directory", rel), errors.New("directory")
	}
	if info.Size() > MaxBodyFileSize {
		return nil, fmt.Sprintf("bodyFile %q is %s; the limit is %s", rel, size(info.Size()), size(MaxBodyFileSize)), errors.New("too large")
	}
	data, err := os.ReadFile(real)
	if err != nil {
		return nil, fmt.Sprintf("bodyFile %q: %s", rel, osMessage(err)), err
	}
	l.hashFile(full, data)
	l.set.Deps = append(l.set.Deps, full)
	return data, "", nil
}

func within(root, path string) bool {
	r, err := filepath.Rel(root, path)
	return err == nil && r != ".." && !strings.HasPrefix(r, ".."+string(filepath.Separator)) && !filepath.IsAbs(r)
}

// finish runs the checks that span files, names unnamed routes and returns
// the set or every problem.
func (l *loader) finish() (*Set, error) {
	firstAt := map[string]Pos{}
	for _, n := range l.names {
		if first, dup := firstAt[n.name]; dup {
			l.failf(n.pos, "route %q: duplicate route name (first at %s)", n.name, first)
			continue
		}
		firstAt[n.name] = n.pos
	}
	names := map[string]*Route{}
	for _, r := range l.set.Routes() {
		if r.Named {
			names[r.Name] = r
		}
	}
	for _, r := range l.set.Routes() {
		if r.Named {
			continue
		}
		base := autoName(r)
		name := base
		for i := 2; names[name] != nil; i++ {
			name = base + " #" + strconv.Itoa(i)
		}
		r.Name = name
		names[name] = r
	}
	for _, r := range l.set.Routes() {
		r.Identity = r.Name + "@" + r.Identity
	}
	if len(l.errs) > 0 {
		return nil, joinErrors(l.errs)
	}
	l.set.Hash = hex.EncodeToString(l.hash.Sum(nil))
	return l.set, nil
}

func autoName(r *Route) string {
	m := "*"
	if len(r.Methods) > 0 {
		m = strings.Join(r.Methods, ",")
	}
	return m + " " + r.Path
}

// identity hashes a route's definition (its node tree, the file's
// defaults and the body files it read), independent of where it stands.
func (d *fileDecoder) identity(n *yaml.Node, bodies []byte) string {
	h := sha256.New()
	budget := nodeBudget
	dump(h, n, &budget, 0)
	h.Write([]byte{0})
	if d.defaultsNode != nil {
		dump(h, d.defaultsNode, &budget, 0)
	}
	h.Write(bodies)
	return hex.EncodeToString(h.Sum(nil)[:12])
}

func dump(w io.Writer, n *yaml.Node, budget *int, depth int) {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 100; i++ {
		n = n.Alias
	}
	*budget--
	if n == nil || *budget < 0 || depth > maxDepth {
		return
	}
	fmt.Fprintf(w, "%d%s\x00%d:%s", n.Kind, n.ShortTag(), len(n.Value), n.Value)
	for _, c := range n.Content {
		dump(w, c, budget, depth+1)
	}
	w.Write([]byte{')'})
}

// parseYAML parses exactly one YAML document. yaml.v3 has panicked on
// hostile input in the past; a panic here becomes an error, never a crash.
func parseYAML(data []byte) (doc *yaml.Node, err error) {
	defer func() {
		if p := recover(); p != nil {
			doc, err = nil, fmt.Errorf("yaml: %v", p)
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var n yaml.Node
	if err := dec.Decode(&n); err != nil {
		if errors.Is(err, io.EOF) {
			return &yaml.Node{Kind: yaml.DocumentNode}, nil
		}
		return nil, err
	}
	var next yaml.Node
	if err := dec.Decode(&next); err == nil {
		return nil, &secondDocument{line: next.Line}
	} else if !errors.Is(err, io.EOF) {
		return nil, err
	}
	return &n, nil
}

type secondDocument struct{ line int }

func (e *secondDocument) Error() string {
	return "a scenario file holds one YAML document; a second one starts here"
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// locateSyntaxError turns a yaml.v3 syntax error into line, column and
// message. yaml.v3 reports only a line, and for parser errors the line
// where the enclosing construct began rather than where it broke, so the
// line is refined by finding the shortest prefix of the file (in whole
// lines) that fails with the same message, and the column is that line's
// first tab (a tab can never indent YAML) or first non-blank character.
func locateSyntaxError(data []byte, err error) (line, col int, msg string) {
	var second *secondDocument
	if errors.As(err, &second) {
		return second.line, 1, second.Error()
	}
	msg = strings.TrimPrefix(err.Error(), "yaml: ")
	m := yamlLine.FindStringSubmatch(err.Error())
	if m == nil {
		line, col = locateUnplaced(data, msg)
		return line, col, msg
	}
	line, _ = strconv.Atoi(m[1])
	msg = m[2]
	lines := splitLines(data)
	if len(data) <= 1<<20 && line <= len(lines) {
		if l := shortestFailingPrefix(lines, line, msg); l > 0 {
			line = l
		}
	}
	if line == len(lines)+1 {
		return line, 1, msg // the end of the file, just past its last line break
	}
	if line < 1 || line > len(lines) {
		return max(line, 1), 1, msg
	}
	text := lines[line-1]
	if i := bytes.IndexByte(text, '\t'); i >= 0 && (strings.Contains(msg, "cannot start any token") || strings.Contains(msg, "tab")) {
		return line, utf8.RuneCount(text[:i]) + 1, "a tab character; YAML is indented with spaces only"
	}
	if at, col, plain, ok := diagnoseIndent(lines, line, msg); ok {
		return at, col, plain
	}
	return line, firstNonBlank(text), msg
}

// splitLines splits data after each line break as YAML (and yaml.v3's
// line count) knows them: CRLF, CR, LF, NEL, LS and PS.
func splitLines(data []byte) [][]byte {
	var lines [][]byte
	start := 0
	for i := 0; i < len(data); {
		n := 0
		switch {
		case data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n':
			n = 2
		case data[i] == '\r' || data[i] == '\n':
			n = 1
		case bytes.HasPrefix(data[i:], []byte("\u0085")):
			n = 2
		case bytes.HasPrefix(data[i:], []byte("\u2028")), bytes.HasPrefix(data[i:], []byte("\u2029")):
			n = 3
		}
		if n == 0 {
			i++
			continue
		}
		lines = append(lines, data[start:i+n])
		i += n
		start = i
	}
	if start < len(data) || len(lines) == 0 {
		lines = append(lines, data[start:])
	}
	return lines
}

var unknownAnchor = regexp.MustCompile(`unknown anchor '([^']*)' referenced`)

// locateUnplaced finds the line and column of an error yaml.v3 reports
// without a line: a byte that is not valid UTF-8 or is a control
// character, or an alias of an anchor that was never defined.
func locateUnplaced(data []byte, msg string) (line, col int) {
	off := -1
	switch {
	case strings.Contains(msg, "UTF-8") || strings.Contains(msg, "control characters"):
		for i := 0; i < len(data); {
			r, size := utf8.DecodeRune(data[i:])
			if (r == utf8.RuneError && size == 1) || (r < ' ' && r != '\t' && r != '\n' && r != '\r') || r == 0x7f {
				off = i
				break
			}
			i += size
		}
	case unknownAnchor.MatchString(msg):
		off = bytes.Index(data, []byte("*"+unknownAnchor.FindStringSubmatch(msg)[1]))
	}
	if off < 0 {
		return 1, 1
	}
	line = 1
	for _, l := range splitLines(data) {
		if off < len(l) {
			return line, utf8.RuneCount(l[:off]) + 1
		}
		off -= len(l)
		line++
	}
	return 1, 1
}

// shortestFailingPrefix finds, by bisection, the smallest n >= from such
// that the first n lines fail to parse with message msg, or 0.
func shortestFailingPrefix(lines [][]byte, from int, msg string) int {
	fails := func(n int) bool {
		_, err := parseYAML(bytes.Join(lines[:n], nil))
		if err == nil {
			return false
		}
		m := yamlLine.FindStringSubmatch(err.Error())
		return m != nil && m[2] == msg
	}
	lo, hi := from-1, len(lines) // prefix(lo) is assumed to pass, prefix(hi) fails
	if lo < 0 {
		lo = 0
	}
	if !fails(hi) {
		return 0
	}
	if lo > 0 && fails(lo) {
		return 0 // not monotone around the reported line: keep yaml's line
	}
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if fails(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

func osMessage(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

func size(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
