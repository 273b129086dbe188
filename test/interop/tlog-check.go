// tlog-check reads a writ ledger written by `writ ledger tiles --out DIR` with Go's own
// golang.org/x/mod/sumdb/note and sumdb/tlog (an implementation independent of writ's), and checks it:
// the checkpoint note verifies under the log's vkey, the tiles give the note's root (tlog's
// TileHashReader checks every tile it reads against that root), every entry of the entry bundles
// hashes to its leaf, and each entry's inclusion proof verifies.
//
//	usage: go run tlog-check.go DIR VKEY
//
// Prints "ok <origin> <size>" and exits 0, or the problem and exits 1.
package main

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// C2SP tile paths: tile/<L>/<N>[.p/<W>], N in 3-digit groups, all but the last prefixed with x.
func tilePath(t tlog.Tile) string {
	n := strconv.FormatInt(t.N, 10)
	for len(n)%3 != 0 {
		n = "0" + n
	}
	var groups []string
	for i := 0; i < len(n); i += 3 {
		groups = append(groups, n[i:i+3])
	}
	for i := 0; i < len(groups)-1; i++ {
		groups[i] = "x" + groups[i]
	}
	level := strconv.Itoa(t.L)
	if t.L == -1 {
		level = "entries"
	}
	p := "tile/" + level + "/" + strings.Join(groups, "/")
	if t.W != 1<<uint(t.H) {
		p += ".p/" + strconv.Itoa(t.W)
	}
	return p
}

type dirTiles struct{ dir string }

func (d dirTiles) Height() int { return 8 }
func (d dirTiles) ReadTiles(tiles []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(tiles))
	for i, t := range tiles {
		b, err := os.ReadFile(filepath.Join(d.dir, tilePath(t)))
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}
func (d dirTiles) SaveTiles(tiles []tlog.Tile, data [][]byte) {}

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "tlog-check: "+format+"\n", args...)
	os.Exit(1)
}

func main() {
	if len(os.Args) != 3 {
		fail("usage: tlog-check DIR VKEY")
	}
	dir, vkey := os.Args[1], os.Args[2]
	verifier, err := note.NewVerifier(vkey)
	if err != nil {
		fail("vkey: %v", err)
	}
	msg, err := os.ReadFile(filepath.Join(dir, "checkpoint"))
	if err != nil {
		fail("%v", err)
	}
	n, err := note.Open(msg, note.VerifierList(verifier))
	if err != nil {
		fail("note: %v", err)
	}
	lines := strings.Split(strings.TrimSuffix(n.Text, "\n"), "\n")
	if len(lines) < 3 || lines[0] != verifier.Name() {
		fail("checkpoint text %q: want origin %q, size, root", n.Text, verifier.Name())
	}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil {
		fail("size: %v", err)
	}
	rootBytes, err := base64.StdEncoding.DecodeString(lines[2])
	if err != nil || len(rootBytes) != tlog.HashSize {
		fail("root %q", lines[2])
	}
	var root tlog.Hash
	copy(root[:], rootBytes)
	tree := tlog.Tree{N: size, Hash: root}
	hr := tlog.TileHashReader(tree, dirTiles{dir})
	got, err := tlog.TreeHash(size, hr)
	if err != nil {
		fail("tree hash from tiles: %v", err)
	}
	if got != root {
		fail("tiles give root %v, the note says %v", got, root)
	}
	// Entry bundles: every entry's record hash is its leaf, and its inclusion proof verifies.
	for start := int64(0); start < size; start += 256 {
		w := size - start
		if w > 256 {
			w = 256
		}
		t := tlog.Tile{H: 8, L: -1, N: start / 256, W: int(w)}
		bundle, err := os.ReadFile(filepath.Join(dir, tilePath(t)))
		if err != nil {
			fail("%v", err)
		}
		for i := int64(0); i < w; i++ {
			if len(bundle) < 2 {
				fail("bundle %s ends early", tilePath(t))
			}
			l := int(binary.BigEndian.Uint16(bundle))
			if len(bundle) < 2+l {
				fail("bundle %s ends inside an entry", tilePath(t))
			}
			entry := bundle[2 : 2+l]
			bundle = bundle[2+l:]
			index := start + i
			leaf := tlog.RecordHash(entry)
			hashes, err := hr.ReadHashes([]int64{tlog.StoredHashIndex(0, index)})
			if err != nil {
				fail("leaf %d: %v", index, err)
			}
			if hashes[0] != leaf {
				fail("entry %d hashes to %v, its leaf is %v", index, leaf, hashes[0])
			}
			proof, err := tlog.ProveRecord(size, index, hr)
			if err != nil {
				fail("proof %d: %v", index, err)
			}
			if err := tlog.CheckRecord(proof, size, root, index, leaf); err != nil {
				fail("inclusion of %d: %v", index, err)
			}
		}
		if !bytes.Equal(bundle, nil) && len(bundle) != 0 {
			fail("bundle %s has bytes past its %d entries", tilePath(t), w)
		}
	}
	fmt.Printf("ok %s %d\n", lines[0], size)
}
