// Command rssmap says which parts of a running Go program's binary are in
// its resident memory: it reads the program's mappings of the binary
// (/proc/PID/maps), which of their pages are present (/proc/PID/pagemap,
// root only) and the binary's sections and symbols, and prints the
// resident bytes by section and by package.
//
// The binary must have its symbol table: build it without -s -w (the
// table is not loaded, so the resident memory is the same as the stripped
// build's).
//
// Usage: go run ./hack/rssmap [-top N] [-package P] PID
//
// With -package, it prints the resident symbols of package P instead.
package main

import (
	"debug/elf"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

const pageSize = 4096

func main() {
	top := flag.Int("top", 25, "how many packages (or symbols) to print")
	pkg := flag.String("package", "", "print the resident symbols of this package instead")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: rssmap [-top N] [-package P] PID")
		os.Exit(2)
	}
	if err := run(os.Stdout, flag.Arg(0), *top, *pkg); err != nil {
		fmt.Fprintln(os.Stderr, "rssmap:", err)
		os.Exit(1)
	}
}

func run(w io.Writer, pid string, top int, pkg string) error {
	exe, err := os.Readlink(filepath.Join("/proc", pid, "exe"))
	if err != nil {
		return err
	}
	ranges, err := binaryMappings(pid, exe)
	if err != nil {
		return err
	}
	pages, err := presentPages(pid, ranges)
	if err != nil {
		return err
	}
	f, err := elf.Open(exe)
	if err != nil {
		return err
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		return fmt.Errorf("%s has no symbol table: build it without -s -w (%v)", exe, err)
	}
	sort.Slice(syms, func(i, j int) bool { return syms[i].Value < syms[j].Value })

	bySection := map[string]uint64{}
	byPackage := map[string]uint64{}
	bySymbol := map[string]uint64{}
	var total uint64
	for _, page := range pages {
		total += pageSize
		bySection[sectionOf(f, page)] += pageSize
		// Split the page among the symbols it holds; what no symbol
		// covers is the section's own.
		covered := uint64(0)
		i := sort.Search(len(syms), func(i int) bool { return syms[i].Value+syms[i].Size > page })
		for ; i < len(syms) && syms[i].Value < page+pageSize; i++ {
			s := syms[i]
			lo, hi := max(s.Value, page), min(s.Value+s.Size, page+pageSize)
			if hi <= lo {
				continue
			}
			p := packageOf(s.Name)
			byPackage[p] += hi - lo
			if pkg != "" && p == pkg {
				bySymbol[s.Name] += hi - lo
			}
			covered += hi - lo
		}
		if covered < pageSize {
			byPackage["("+sectionOf(f, page)+", no symbol)"] += pageSize - covered
		}
	}

	if pkg != "" {
		fmt.Fprintf(w, "%s: %.2f MiB of %s resident, in %d symbols:\n", exe, mib(byPackage[pkg]), pkg, len(bySymbol))
		printTop(w, bySymbol, top)
		return nil
	}
	fmt.Fprintf(w, "%s: %.1f MiB of the binary resident\n\nby section:\n", exe, mib(total))
	printTop(w, bySection, len(bySection))
	fmt.Fprintf(w, "\nby package (symbols split by the bytes they hold in a resident page; overlapping symbols count twice):\n")
	printTop(w, byPackage, top)
	fmt.Fprintf(w, "\nby module:\n")
	byModule := map[string]uint64{}
	for p, n := range byPackage {
		byModule[moduleOf(p)] += n
	}
	printTop(w, byModule, top)
	return nil
}

type addrRange struct{ start, end uint64 }

// binaryMappings are the address ranges at which pid maps exe.
func binaryMappings(pid, exe string) ([]addrRange, error) {
	b, err := os.ReadFile(filepath.Join("/proc", pid, "maps"))
	if err != nil {
		return nil, err
	}
	var out []addrRange
	for _, line := range strings.Split(string(b), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 6 || fields[5] != exe {
			continue
		}
		lo, hi, _ := strings.Cut(fields[0], "-")
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("maps line %q", line)
		}
		out = append(out, addrRange{start, end})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no mapping of %s in process %s", exe, pid)
	}
	return out, nil
}

// presentPages are the addresses of the pages of ranges that are in
// memory (bit 63 of each page's pagemap entry).
func presentPages(pid string, ranges []addrRange) ([]uint64, error) {
	f, err := os.Open(filepath.Join("/proc", pid, "pagemap"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []uint64
	for _, r := range ranges {
		n := (r.end - r.start) / pageSize
		buf := make([]byte, n*8)
		if _, err := f.ReadAt(buf, int64(r.start/pageSize*8)); err != nil {
			return nil, fmt.Errorf("reading pagemap: %w", err)
		}
		for i := uint64(0); i < n; i++ {
			if binary.LittleEndian.Uint64(buf[i*8:])&(1<<63) != 0 {
				out = append(out, r.start+i*pageSize)
			}
		}
	}
	return out, nil
}

func sectionOf(f *elf.File, addr uint64) string {
	for _, s := range f.Sections {
		if s.Flags&elf.SHF_ALLOC != 0 && addr+pageSize > s.Addr && addr < s.Addr+s.Size {
			return s.Name
		}
	}
	return "(no section)"
}

// linkerKinds are the prefixes of what the linker makes for a package:
// type descriptors, itabs; strings and functions' tables are shared.
var linkerKinds = []string{"type:", "go:itab.", "go:string.", "go:func.", "go:"}

// splitKind splits the linker's kind off name, if it has one.
func splitKind(name string) (kind, rest string) {
	for _, prefix := range linkerKinds {
		if rest, ok := strings.CutPrefix(name, prefix); ok {
			return prefix, rest
		}
	}
	return "", name
}

// packageOf is the package a Go symbol belongs to, after its kind when
// the linker made it.
func packageOf(name string) string {
	kind, name := splitKind(name)
	if kind == "go:string." || kind == "go:func." {
		return kind + "*"
	}
	name = strings.TrimLeft(name, "*[]")
	if i := strings.IndexAny(name, "[,"); i >= 0 {
		name = name[:i]
	}
	slash := strings.LastIndex(name, "/")
	if dot := strings.Index(name[slash+1:], "."); dot >= 0 {
		name = name[:slash+1+dot]
	}
	return kind + name
}

// moduleOf is a package's first three path elements (its first, in the
// standard library), after its kind.
func moduleOf(pkg string) string {
	kind, pkg := splitKind(pkg)
	parts := strings.Split(pkg, "/")
	if !strings.Contains(parts[0], ".") {
		return kind + parts[0]
	}
	return kind + strings.Join(parts[:min(3, len(parts))], "/")
}

func printTop(w io.Writer, m map[string]uint64, n int) {
	type kv struct {
		k string
		v uint64
	}
	var all []kv
	for k, v := range m {
		all = append(all, kv{k, v})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].v > all[j].v || all[i].v == all[j].v && all[i].k < all[j].k })
	for i, e := range all {
		if i == n {
			break
		}
		fmt.Fprintf(w, "%8.2f MiB  %s\n", mib(e.v), e.k)
	}
}

func mib(n uint64) float64 { return float64(n) / (1 << 20) }
