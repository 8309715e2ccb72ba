package scenarios

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
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
func Load(paths ...string) (*Set, error) { return LoadWith(nil, paths...) }

// LoadWith is Load with builtin, the files built into the program beside
// its examples: a file a scenario names (an openapi: spec, a bodyFile)
// that is not beside it is read from builtin under the same relative
// name, so that a copy of the Stripe example (scenariomock examples stripe
// > stripe.yaml) serves the spec built in. A nil builtin is Load.
func LoadWith(builtin fs.FS, paths ...string) (*Set, error) {
	if len(paths) == 0 {
		return nil, errors.New("no scenario files given")
	}
	l := newLoader()
	l.builtin = builtin
	defer l.close()
	for _, p := range paths {
		l.loadPath(p)
	}
	l.set.paths = slices.Clone(paths)
	return l.finish()
}

// Hash returns the Hash that Load(paths...) would give its set, without
// parsing anything: it lists and reads the scenario files as Load does and
// reads deps, the body files in the order a load read them (a Set's Deps).
// As long as the scenario files are unchanged they name the same body
// files, so equal hashes mean a Load would build the same set; when a
// scenario file changed, the hash differs whatever deps says. Any problem
// reading a file is returned as an error: the caller should then Load,
// which reports it with its position. Hash is safe for concurrent use.
func Hash(paths []string, deps []string) (string, error) {
	if len(paths) == 0 {
		return "", errors.New("no scenario files given")
	}
	l := newLoader()
	defer l.close()
	l.hashOnly = true
	for _, p := range paths {
		l.loadPath(p)
	}
	if len(l.errs) > 0 {
		return "", joinErrors(l.errs)
	}
	for _, dep := range deps {
		f, err := os.OpenFile(dep, os.O_RDONLY|syscall.O_NONBLOCK, 0)
		if err != nil {
			return "", err
		}
		data, err := readRegular(f, MaxBodyFileSize)
		f.Close()
		if err != nil {
			return "", fmt.Errorf("%s: %w", dep, err)
		}
		l.hash.body(dep, data)
	}
	return l.hash.sum(), nil
}

// Rehash returns the hash the files s was loaded from have now, by Hash:
// equal to s.Hash when a Load would give the same set again. A set from
// LoadBytes has no files; its hash is its own.
func (s *Set) Rehash() (string, error) {
	if s.paths == nil {
		return s.Hash, nil
	}
	return Hash(s.paths, s.Deps)
}

// contentHash is the one place the hash of a set's content is computed,
// by Load and by Hash alike, so that the two cannot disagree. Scenario
// files and body files go to separate hashes, each in the order read, so
// that Hash can read the body files after the scenario files.
type contentHash struct{ files, bodies hash.Hash }

func newContentHash() *contentHash {
	return &contentHash{files: sha256.New(), bodies: sha256.New()}
}

func (h *contentHash) file(path string, data []byte) { hashEntry(h.files, path, data) }
func (h *contentHash) body(path string, data []byte) { hashEntry(h.bodies, path, data) }

func hashEntry(h hash.Hash, path string, data []byte) {
	// The lengths keep the boundaries unambiguous: a path with NULs, or
	// bytes moved from one file to the next, change the hash.
	var n [2 * binary.MaxVarintLen64]byte
	b := binary.AppendUvarint(n[:0], uint64(len(path)))
	b = binary.AppendUvarint(b, uint64(len(data)))
	h.Write(b)
	h.Write([]byte(path))
	h.Write(data)
}

func (h *contentHash) sum() string {
	all := sha256.New()
	all.Write(h.files.Sum(nil))
	all.Write(h.bodies.Sum(nil))
	return hex.EncodeToString(all.Sum(nil))
}

// LoadBytes reads one scenario file held in memory, such as the built-in
// demo; name is used in messages. bodyFile is not available.
func LoadBytes(name string, data []byte) (*Set, error) {
	l := newLoader()
	l.hash.file(name, data)
	l.parse(name, data, "", "")
	return l.finish()
}

// LoadDocument is LoadBytes for a runtime document, which is laid on
// the files (Overlay): its events may name webhook endpoints that only
// the files define, so that check waits for Overlay.
func LoadDocument(name string, data []byte) (*Set, error) {
	l := newLoader()
	l.document = true
	l.hash.file(name, data)
	l.parse(name, data, "", "")
	return l.finish()
}

// LoadFS reads the scenario file name of fsys, such as a built-in example
// (Stripe's, whose openapi: block names the spec built in beside it): its
// bodyFile: and openapi: files are read from fsys, relative to it. Nothing
// of fsys is watched or listed in Deps: it does not change.
func LoadFS(fsys fs.FS, name string) (*Set, error) {
	data, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, &Error{Pos: Pos{File: name}, Msg: osMessage(err)}
	}
	l := newLoader()
	l.fsys = fsys
	l.hash.file(name, data)
	l.parse(name, data, path.Dir(name), ".")
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
	hash        *contentHash
	fallbackPos Pos
	// whole turns decodeInChunks off, for tests that compare the two;
	// sliced counts the files it decoded.
	whole  bool
	sliced int
	// hashOnly reads and hashes the scenario files without parsing them,
	// for Hash.
	hashOnly bool
	// bodies holds the content of each of set.Deps, hashed when the load
	// ends: a file decoded in slices may be decoded again whole.
	bodies [][]byte
	// roots holds the scenario roots opened so far, by path; a nil root
	// could not be opened. close releases them.
	roots map[string]*os.Root
	// document: the load is of a runtime document (LoadDocument), whose
	// events may name endpoints of the files it is laid on.
	document bool
	// fsys, when set, is where body and openapi: files are read from
	// (LoadFS), instead of the operating system's files; builtin, where
	// one not found beside its scenario file is read from (LoadWith).
	fsys, builtin fs.FS
}

func newLoader() *loader {
	return &loader{set: &Set{}, hash: newContentHash(), roots: map[string]*os.Root{}}
}

func (l *loader) close() {
	for _, r := range l.roots {
		if r != nil {
			r.Close()
		}
	}
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

// loadFile reads one scenario file; root bounds its body files and, for a
// file found by walking root, the file itself. A walked file that is gone
// by the time it is read was deleted mid-reload: it is skipped, and the
// deletion's own event reloads. A file named on the command line is opened
// as named, wherever its links lead: the user chose it.
func (l *loader) loadFile(path, root string, walked bool) {
	var f *os.File
	var err error
	if walked {
		f, err = l.openWithin(root, path)
	} else {
		f, err = os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
		if errors.Is(err, syscall.ENXIO) {
			err = explainENXIO(err, func() (fs.FileInfo, error) { return os.Stat(path) })
		}
	}
	if err != nil {
		if walked && errors.Is(err, fs.ErrNotExist) {
			return
		}
		if errors.Is(err, errOutside) {
			l.failf(Pos{File: path}, "a symbolic link to a file outside the scenario root %q", root)
			return
		}
		var bad *irregularError
		if errors.As(err, &bad) {
			l.failf(Pos{File: path}, "is %s, not a regular file", bad.kind())
			return
		}
		l.failf(Pos{File: path}, "%s", osMessage(err))
		return
	}
	data, err := readRegular(f, MaxFileSize)
	f.Close()
	var bad *irregularError
	var big *sizeError
	switch {
	case errors.As(err, &bad) && bad.mode.IsDir():
		l.failf(Pos{File: path}, "is a directory, not a scenario file")
		return
	case errors.As(err, &bad):
		l.failf(Pos{File: path}, "is %s, not a regular file", bad.kind())
		return
	case errors.As(err, &big):
		l.failf(Pos{File: path}, "the file is %d bytes (%s); a scenario file may be at most %s", big.size, size(big.size), size(MaxFileSize))
		return
	case errors.Is(err, errGrew):
		l.failf(Pos{File: path}, "the file grew past %s while being read", size(MaxFileSize))
		return
	case err != nil:
		l.failf(Pos{File: path}, "%s", osMessage(err))
		return
	}
	l.hash.file(path, data)
	if l.hashOnly {
		return
	}
	if isOpenAPIDocument(data) {
		// An OpenAPI document kept beside the scenarios that use it (the
		// spec an openapi: block names) is not a scenario file: a walked
		// one is skipped, one named by itself is refused with the way to
		// serve it.
		if !walked {
			l.failf(Pos{File: path, Line: 1, Col: 1}, "is an OpenAPI document, not a scenario file: serve it with --openapi %s, or name it in a scenario's openapi: block (openapi: {spec: %s})", path, filepath.Base(path))
		}
		return
	}
	l.parse(path, data, filepath.Dir(path), root)
}

// openAPIVersion finds an OpenAPI or Swagger document's version line: a
// top-level openapi: or swagger: key whose value is a version, in YAML, or
// the same key in a JSON document. A scenario's openapi: block is a
// mapping, never a version.
var openAPIVersion = regexp.MustCompile(`(?m)^(?:openapi|swagger):[ \t]*['"]?[0-9]|"(?:openapi|swagger)"\s*:\s*"[0-9]`)

// isOpenAPIDocument says whether data is an OpenAPI document rather than
// a scenario file, by its version key (see openAPIVersion); a JSON
// document is recognised only when the file is one JSON object.
func isOpenAPIDocument(data []byte) bool {
	// The expression has no literal prefix for the regexp package to skip
	// ahead with, so it steps through every byte of the file (0.8 s of
	// CPU for 100,000 routes); a file without either word cannot match.
	if !bytes.Contains(data, []byte("openapi")) && !bytes.Contains(data, []byte("swagger")) {
		return false
	}
	loc := openAPIVersion.FindIndex(data)
	if loc == nil {
		return false
	}
	if data[loc[0]] == '"' {
		return bytes.HasPrefix(bytes.TrimSpace(data), []byte("{"))
	}
	return true
}

// parse decodes one file's bytes into the set. dir is the file's directory
// and root the directory body files must stay within; "" forbids them.
func (l *loader) parse(path string, data []byte, dir, root string) {
	newDecoder := func() *fileDecoder {
		d := &fileDecoder{decoder: decoder{file: path, budget: nodeBudget, src: data}}
		d.readBody = func(rel string) ([]byte, string, error) {
			data, msg, err := l.readBody(dir, root, rel)
			d.bodies.Write(data)
			return data, msg, err
		}
		return d
	}
	d := newDecoder()
	var p parsed
	ok := false
	if !l.whole {
		p, ok = l.decodeInChunks(d, path, data)
	}
	if ok {
		l.sliced++
	}
	if !ok {
		doc, err := parseYAML(data)
		if err != nil {
			line, col, msg := locateSyntaxError(data, err)
			l.failf(Pos{File: path, Line: line, Col: col}, "%s", msg)
			return
		}
		d = newDecoder()
		p = d.decodeFile(doc, path)
	}
	l.errs = append(l.errs, d.errs...)
	l.names = append(l.names, d.names...)
	l.set.Files = append(l.set.Files, p.file)
	for _, r := range p.file.Routes {
		r.CORS = p.file.CORS // a route answers browsers as its own file says
		r.Session = p.file.Session
		if r.Session != "" && r.Idempotency != nil {
			// A session's keys are its own: two parallel tests may send
			// the same Idempotency-Key to the same path. (The block may
			// be the file's defaults, shared by its routes: a copy.)
			id := *r.Idempotency
			id.Group = "session " + r.Session + ": " + id.Group
			r.Idempotency = &id
		}
	}
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

// chunkRoutes is how many routes decodeInChunks parses at a time, and the
// fewest routes a file needs for it to be worth it.
const chunkRoutes = 1000

// decodeInChunks decodes a large file a slice of routes at a time, so
// that yaml.v3's node tree (some 4 KB per route) never holds the whole
// file: at 100,000 routes the tree alone was some 400 MB. It applies to
// the plain layout only: a top-level "routes:" line followed by its list
// in block style, in a file with LF line breaks and no anchors (an alias
// could point from one slice into another). The file is parsed as the
// rest of the file with the list's lines blanked (keeping every line
// number), then as one document per slice of list items, whose node lines
// are shifted back to the file's. A slice that does not parse means the
// lines were not what they seemed (a quoted or flow scalar across an item
// boundary): then nothing is kept, and ok is false, and the caller parses
// the file whole, which also gives syntax errors their usual positions.
func (l *loader) decodeInChunks(d *fileDecoder, path string, data []byte) (p parsed, ok bool) {
	if len(data) < 64*chunkRoutes || bytes.ContainsAny(data, "&\r\t") ||
		bytes.Contains(data, []byte("\u0085")) || bytes.Contains(data, []byte("\u2028")) || bytes.Contains(data, []byte("\u2029")) {
		return parsed{}, false
	}
	lines := splitLines(data) // not d's: they would outlive the slices
	first, end, items := routeItems(lines)
	if len(items) < chunkRoutes {
		return parsed{}, false
	}
	head := make([]byte, 0, len(data))
	for i, ln := range lines {
		if i >= first && i < end {
			head = append(head, '\n')
			continue
		}
		head = append(head, ln...)
	}
	// The slices are cut from data by the byte offset of their first
	// lines; the lines themselves can go.
	offsets := make([]int, len(items)+1)
	off, next := 0, 0
	for i, ln := range lines[:end] {
		if next < len(items) && items[next] == i {
			offsets[next] = off
			next++
		}
		off += len(ln)
	}
	offsets[len(items)] = off
	doc, err := parseYAML(head)
	if err != nil {
		return parsed{}, false
	}
	// Undo what the routes decoded so far added to the loader, should a
	// slice not parse.
	deps := len(l.set.Deps)
	defer func() {
		if !ok {
			l.set.Deps = l.set.Deps[:deps]
			l.bodies = l.bodies[:deps]
		}
	}()
	d.chunked = true
	p = d.decodeFile(doc, path)
	d.chunked = false
	if len(p.file.Routes) != 0 {
		return parsed{}, false
	}
	// Parsing a slice is some two thirds of the work and decoding its
	// routes the rest: parsers goroutines parse the next slices while this
	// one decodes them in order, so that a large load takes every core.
	// They stop when they are done, or when this function returns first.
	// Each parser has a buffer of its own; the nodes keep none of it.
	parsers := min(runtime.GOMAXPROCS(0), 4)
	order := make(chan chan *yaml.Node, parsers) // each slice's list, in file order; nil when it did not parse
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(order)
		bufs := make(chan *[]byte, parsers)
		for range parsers {
			bufs <- new([]byte)
		}
		var running sync.WaitGroup
		defer running.Wait()
		for from := 0; from < len(items); from += chunkRoutes {
			to := min(from+chunkRoutes, len(items))
			var buf *[]byte
			select {
			case buf = <-bufs:
			case <-stop:
				return
			}
			done := make(chan *yaml.Node, 1)
			select {
			case order <- done:
			case <-stop:
				return
			}
			running.Go(func() {
				list := parseSlice(buf, data[offsets[from]:offsets[to]], to-from)
				if list != nil {
					shiftLines(list, items[from]-1) // the slice's line 2 is the file's line items[from]+1
				}
				bufs <- buf
				done <- list
			})
		}
	})
	defer wg.Wait()
	defer close(stop)
	for from := 0; from < len(items); from += chunkRoutes {
		list := <-<-order
		if list == nil {
			return parsed{}, false
		}
		for i, rn := range list.Content {
			if r := d.route(rn, from+i); r != nil {
				p.file.Routes = append(p.file.Routes, r)
			}
			list.Content[i] = nil
		}
	}
	return p, true
}

// parseSlice parses items, n items of the routes list, as the document
// "routes:" followed by them, in *buf, and returns the list, or nil when
// they do not parse as a list of n items.
func parseSlice(buf *[]byte, items []byte, n int) *yaml.Node {
	chunk := append(append((*buf)[:0], "routes:\n"...), items...)
	*buf = chunk
	doc, err := parseYAML(chunk)
	if err != nil || len(doc.Content) != 1 || len(doc.Content[0].Content) != 2 {
		return nil
	}
	list := doc.Content[0].Content[1]
	if list.Kind != yaml.SequenceNode || len(list.Content) != n {
		return nil
	}
	return list
}

// routeItems finds, in a file's lines, the block list that follows a
// top-level "routes:" line: the index of its first line, the index just
// past its last, and the index of the line where each item starts. None
// when the layout is anything but plain.
func routeItems(lines [][]byte) (first, end int, items []int) {
	key := -1
	for i, ln := range lines {
		if bytes.HasPrefix(ln, []byte("---")) || bytes.HasPrefix(ln, []byte("...")) || bytes.HasPrefix(ln, []byte("%")) {
			return 0, 0, nil // document markers and directives
		}
		if rest, ok := bytes.CutPrefix(ln, []byte("routes:")); ok {
			if rest = bytes.TrimLeft(rest, " "); len(rest) > 0 && rest[0] != '\n' && rest[0] != '#' {
				return 0, 0, nil // a value on the key's line: a flow list, an anchor or a tag
			}
			key = i
			break
		}
	}
	if key < 0 {
		return 0, 0, nil
	}
	indent := -1
	end = len(lines)
	for i := key + 1; i < len(lines); i++ {
		ln := lines[i]
		text := bytes.TrimLeft(ln, " ")
		if len(text) == 0 || text[0] == '\n' || text[0] == '#' {
			continue // blank or a comment: part of whatever it is in
		}
		n := len(ln) - len(text)
		isItem := text[0] == '-' && (len(text) == 1 || text[1] == ' ' || text[1] == '\n')
		if indent < 0 {
			if !isItem {
				return 0, 0, nil
			}
			indent = n
		}
		switch {
		case n == indent && isItem:
			items = append(items, i)
		case n > indent:
			// inside the current item
		default:
			end = i
			i = len(lines)
		}
	}
	if len(items) == 0 {
		return 0, 0, nil
	}
	// Comments and blank lines just before the next key stay with the
	// list; they are nothing to either parse.
	return items[0], end, items
}

// shiftLines adds by to the line of n and of every node below it.
func shiftLines(n *yaml.Node, by int) {
	n.Line += by
	for _, c := range n.Content {
		shiftLines(c, by)
	}
}

// readBody reads a bodyFile named relative to dir, refusing paths that
// leave root, also through symbolic links, and anything but a regular file.
func (l *loader) readBody(dir, root, rel string) ([]byte, string, error) {
	if root == "" {
		err := errors.New("no root")
		if l.document {
			return nil, "bodyFile is not available in a runtime document (it reads files); give the body as body:, or put the route in a scenario file", err
		}
		return nil, "bodyFile is not available here (a scenario that is not a file has no directory to read it from)", err
	}
	if filepath.IsAbs(rel) {
		return nil, fmt.Sprintf("bodyFile %q must be relative to the scenario file", rel), errors.New("absolute")
	}
	if l.fsys != nil {
		return l.readBodyFS(l.fsys, dir, rel)
	}
	full := filepath.Join(dir, rel)
	outside := fmt.Sprintf("bodyFile %q is outside the scenario root %q", rel, root)
	if !within(root, full) {
		return nil, outside, errOutside
	}
	f, err := l.openWithin(root, full)
	switch {
	case errors.Is(err, errOutside):
		return nil, outside + " (through a symbolic link)", err
	case errors.Is(err, fs.ErrNotExist) && l.builtin != nil && l.hasBuiltin(rel):
		return l.readBodyFS(l.builtin, ".", rel)
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Sprintf("bodyFile %q: no such file (looked for %s)", rel, full), err
	case errors.As(err, new(*irregularError)):
		return nil, fmt.Sprintf("bodyFile %q %s", rel, err), err
	case err != nil:
		return nil, fmt.Sprintf("bodyFile %q: %s", rel, osMessage(err)), err
	}
	data, err := readRegular(f, MaxBodyFileSize)
	f.Close()
	var bad *irregularError
	var big *sizeError
	switch {
	case errors.As(err, &bad) && bad.mode.IsDir():
		return nil, fmt.Sprintf("bodyFile %q is a directory", rel), err
	case errors.As(err, &bad):
		return nil, fmt.Sprintf("bodyFile %q is %s, not a regular file", rel, bad.kind()), err
	case errors.As(err, &big):
		return nil, fmt.Sprintf("bodyFile %q is %s; the limit is %s", rel, size(big.size), size(MaxBodyFileSize)), err
	case errors.Is(err, errGrew):
		return nil, fmt.Sprintf("bodyFile %q grew past %s while being read", rel, size(MaxBodyFileSize)), err
	case err != nil:
		return nil, fmt.Sprintf("bodyFile %q: %s", rel, osMessage(err)), err
	}
	l.set.Deps = append(l.set.Deps, full)
	l.bodies = append(l.bodies, data)
	return data, "", nil
}

// hasBuiltin says whether rel, a relative slash-separated name, is a file
// of l.builtin.
func (l *loader) hasBuiltin(rel string) bool {
	name := path.Clean(filepath.ToSlash(rel))
	if !fs.ValidPath(name) {
		return false
	}
	info, err := fs.Stat(l.builtin, name)
	return err == nil && info.Mode().IsRegular()
}

// readBodyFS is readBody for a file of fsys (LoadFS, or the built-in
// files of LoadWith). Such a file is no dep: it cannot change.
func (l *loader) readBodyFS(fsys fs.FS, dir, rel string) ([]byte, string, error) {
	full := path.Join(dir, filepath.ToSlash(rel))
	if !fs.ValidPath(full) {
		return nil, fmt.Sprintf("bodyFile %q is outside the built-in files", rel), errOutside
	}
	info, err := fs.Stat(fsys, full)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Sprintf("bodyFile %q: no such file among the built-in files (looked for %s)", rel, full), err
	case err != nil:
		return nil, fmt.Sprintf("bodyFile %q: %s", rel, osMessage(err)), err
	case !info.Mode().IsRegular():
		return nil, fmt.Sprintf("bodyFile %q is not a regular file", rel), &irregularError{mode: info.Mode()}
	case info.Size() > MaxBodyFileSize:
		return nil, fmt.Sprintf("bodyFile %q is %s; the limit is %s", rel, size(info.Size()), size(MaxBodyFileSize)), &sizeError{info.Size()}
	}
	data, err := fs.ReadFile(fsys, full)
	if err != nil {
		return nil, fmt.Sprintf("bodyFile %q: %s", rel, osMessage(err)), err
	}
	// Not hashed: the files are the program's own, the same for as long
	// as it runs, and Hash (the reload check) reads only deps.
	return data, "", nil
}

var (
	errOutside = errors.New("outside the scenario root")
	errGrew    = errors.New("grew while being read")
)

// root returns the scenario root at path, opened once per load.
func (l *loader) root(path string) (*os.Root, error) {
	if r, ok := l.roots[path]; ok && r != nil {
		return r, nil
	}
	r, err := os.OpenRoot(path)
	if err != nil {
		return nil, err
	}
	l.roots[path] = r
	return r, nil
}

// openWithin opens full, a path lexically inside root, for reading. The
// open goes through an os.Root, so that no symbolic link followed during
// the open itself can lead out of root: a check on the path followed by a
// second open by path would follow whatever link has been swapped in
// between. os.Root refuses every absolute link and every link through
// "..", even those that land back inside root (Kubernetes mounts use
// them), so on refusal the path is resolved and, if it stays inside the
// real root, opened again through the root by its resolved relative path;
// a link swapped after that resolution is confined all the same.
func (l *loader) openWithin(root, full string) (*os.File, error) {
	r, err := l.root(root)
	if err != nil {
		return nil, err
	}
	rel, err := filepath.Rel(root, full)
	if err != nil {
		return nil, err
	}
	f, err := openNonblock(r, rel)
	switch {
	case err == nil, errors.Is(err, fs.ErrNotExist), errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.ELOOP):
		return f, err
	case errors.Is(err, syscall.ENXIO):
		return nil, explainENXIO(err, func() (fs.FileInfo, error) { return r.Stat(rel) })
	}
	// What is left is the root's refusal of a link. From here on, every
	// failure is reported as leaving the root: a link that cannot be
	// resolved, or one swapped in after it was resolved, that the root
	// refuses again.
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, errOutside
	}
	real, err := filepath.EvalSymlinks(full)
	if err != nil || !within(realRoot, real) {
		return nil, errOutside
	}
	realRel, err := filepath.Rel(realRoot, real)
	if err != nil {
		return nil, errOutside
	}
	f, err = openNonblock(r, realRel)
	if err != nil {
		return nil, errOutside
	}
	return f, nil
}

// openNonblock opens name in r for reading. O_NONBLOCK lets the open of a
// named pipe return at once instead of waiting for a writer forever;
// readRegular then refuses it.
func openNonblock(r *os.Root, name string) (*os.File, error) {
	return r.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}

// explainENXIO turns the error of opening a socket (ENXIO, "no such device
// or address") into an irregularError saying what the file is; stat tells
// it, for the message only.
func explainENXIO(err error, stat func() (fs.FileInfo, error)) error {
	if info, serr := stat(); serr == nil && !info.Mode().IsRegular() {
		return &irregularError{mode: info.Mode()}
	}
	return err
}

// irregularError is a file that is not a regular file: a directory, a
// named pipe, a device or a socket.
type irregularError struct{ mode fs.FileMode }

func (e *irregularError) Error() string { return "is " + e.kind() + ", not a regular file" }

func (e *irregularError) kind() string {
	switch m := e.mode; {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0, m&fs.ModeCharDevice != 0:
		return "a device"
	}
	return "not a regular file"
}

// sizeError is a file past its size limit.
type sizeError struct{ size int64 }

func (e *sizeError) Error() string { return "too large" }

// readRegular reads f whole if it is a regular file of at most limit
// bytes. The check is made on the open descriptor, the very file read,
// never on a path that may name another file by then.
func readRegular(f *os.File, limit int64) ([]byte, error) {
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, &irregularError{mode: info.Mode()}
	}
	if info.Size() > limit {
		return nil, &sizeError{info.Size()}
	}
	// One read into a buffer of the size fstat gave (and a byte more, to
	// see the end or a file that grew) instead of io.ReadAll's doubling.
	data := make([]byte, 0, info.Size()+1)
	r := io.LimitReader(f, limit+1)
	for {
		n, err := r.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
	}
	if int64(len(data)) > limit {
		return nil, errGrew
	}
	return data, nil
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
		if r.Session != "" {
			r.Identity = r.Session + "/" + r.Identity // a route's sequence is its session's
		}
	}
	l.checkWebhooks()
	if len(l.errs) > 0 {
		return nil, joinErrors(l.errs)
	}
	for i, dep := range l.set.Deps {
		l.hash.body(dep, l.bodies[i])
	}
	l.set.Hash = l.hash.sum()
	l.set.hash = l.hash
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
	id := identities.Get().(*identityHasher)
	defer identities.Put(id)
	budget := nodeBudget
	id.buf = appendNode(id.buf[:0], n, &budget, 0)
	id.buf = append(id.buf, 0)
	if d.defaultsNode != nil {
		id.buf = appendNode(id.buf, d.defaultsNode, &budget, 0)
	}
	id.h.Reset()
	id.h.Write(id.buf)
	id.h.Write(bodies)
	id.sum = id.h.Sum(id.sum[:0])
	return hex.EncodeToString(id.sum[:12])
}

// identityHasher is the scratch space of identity, reused across routes:
// at 100,000 routes, a hash and a buffer each were a good part of a load.
type identityHasher struct {
	h   hash.Hash
	buf []byte
	sum []byte
}

var identities = sync.Pool{New: func() any { return &identityHasher{h: sha256.New()} }}

// appendNode appends an unambiguous serialization of n (kind, tag, value,
// children) to buf, following aliases and spending one unit of budget per
// node.
func appendNode(buf []byte, n *yaml.Node, budget *int, depth int) []byte {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 100; i++ {
		n = n.Alias
	}
	*budget--
	if n == nil || *budget < 0 || depth > maxDepth {
		return buf
	}
	buf = strconv.AppendUint(buf, uint64(n.Kind), 10)
	buf = append(buf, n.ShortTag()...)
	buf = append(buf, 0)
	buf = strconv.AppendInt(buf, int64(len(n.Value)), 10)
	buf = append(buf, ':')
	buf = append(buf, n.Value...)
	for _, c := range n.Content {
		buf = appendNode(buf, c, budget, depth+1)
	}
	return append(buf, ')')
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
		if c := data[i]; c != '\r' && c != '\n' && c != 0xc2 && c != 0xe2 {
			i++ // not the first byte of any line break: most bytes
			continue
		}
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
