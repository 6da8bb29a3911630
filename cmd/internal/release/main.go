// Command release builds the release binaries of the reconcile CLI: static
// (CGO_ENABLED=0, -trimpath) for linux, darwin and windows on amd64 and arm64,
// with the version, commit and commit time that `reconcile --version` prints
// set by -ldflags, each archived (.tar.gz, .zip for Windows) with the README,
// and a SHA-256 checksum file of the archives. See docs/releasing.md.
//
//	go run ./cmd/internal/release [-out dist] [-verify] VERSION
//	go run ./cmd/internal/release -snapshot [-out dist] [-verify]
//
// VERSION is the tag, vX.Y.Z. -snapshot builds an untagged commit as
// v0.0.0-snapshot-COMMIT (CI does, with -verify). -verify then checks every
// binary: the one for this machine by running --version; each one's build
// information (go version -m) for its platform, and its bytes for the version
// and commit (-trimpath keeps -ldflags out of the build information).
package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"golang.org/x/mod/semver"
)

// platforms are the GOOS/GOARCH pairs released.
var platforms = [][2]string{
	{"linux", "amd64"}, {"linux", "arm64"},
	{"darwin", "amd64"}, {"darwin", "arm64"},
	{"windows", "amd64"}, {"windows", "arm64"},
}

func main() {
	out := flag.String("out", "dist", "the folder the archives and checksums go in (made anew)")
	snapshot := flag.Bool("snapshot", false, "build this commit as v0.0.0-snapshot-COMMIT, not a tag")
	verify := flag.Bool("verify", false, "check each binary's version after building")
	flag.Parse()
	var version string
	switch {
	case *snapshot && flag.NArg() == 0:
	case !*snapshot && flag.NArg() == 1 && semver.IsValid(flag.Arg(0)) && semver.Canonical(flag.Arg(0)) == flag.Arg(0):
		version = flag.Arg(0)
	default:
		fmt.Fprintln(os.Stderr, "usage: release [-out dist] [-verify] vX.Y.Z | release -snapshot [-out dist] [-verify]")
		os.Exit(2)
	}
	if err := run(*out, version, *verify); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

// build is the identity of one release build.
type build struct {
	version, commit, date string
}

func run(out, version string, verify bool) error {
	b, err := identify(version)
	if err != nil {
		return err
	}
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	bin := filepath.Join(out, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return err
	}
	readme, err := repoFile("README.md")
	if err != nil {
		return err
	}
	var sums strings.Builder
	for _, p := range platforms {
		exe, err := b.compile(bin, p[0], p[1])
		if err != nil {
			return err
		}
		if verify {
			if err := b.check(exe, p[0], p[1]); err != nil {
				return err
			}
		}
		archive, err := b.archive(out, exe, readme, p[0], p[1])
		if err != nil {
			return err
		}
		sum, err := sha256File(archive)
		if err != nil {
			return err
		}
		fmt.Fprintf(&sums, "%s  %s\n", sum, filepath.Base(archive))
		fmt.Println(archive)
	}
	if err := os.RemoveAll(bin); err != nil {
		return err
	}
	checksums := filepath.Join(out, "reconcile_"+strings.TrimPrefix(b.version, "v")+"_checksums.txt")
	fmt.Println(checksums)
	return os.WriteFile(checksums, []byte(sums.String()), 0o644)
}

// identify returns the build identity of HEAD: version (or a snapshot
// version), its commit and its commit time.
func identify(version string) (build, error) {
	commit, err := git("rev-parse", "HEAD")
	if err != nil {
		return build{}, err
	}
	date, err := git("log", "-1", "--format=%cI", "HEAD")
	if err != nil {
		return build{}, err
	}
	if t, err := time.Parse(time.RFC3339, date); err == nil {
		date = t.UTC().Format(time.RFC3339)
	}
	if version == "" {
		version = "v0.0.0-snapshot-" + commit[:12]
	} else if status, err := git("status", "--porcelain", "--untracked-files=no"); err != nil || status != "" {
		return build{}, fmt.Errorf("the work tree has changes: a release is built from its tagged commit")
	}
	return build{version: version, commit: commit, date: date}, nil
}

// git runs git in the repository and returns its trimmed output.
func git(args ...string) (string, error) {
	out, err := exec.Command("git", args...).Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}

// repoFile returns the path of a file at the repository's top.
func repoFile(name string) (string, error) {
	top, err := git("rev-parse", "--show-toplevel")
	if err != nil {
		return "", err
	}
	return filepath.Join(top, name), nil
}

// ldflags returns the -ldflags of b: stripped symbols, and the version,
// commit and date that --version prints.
func (b build) ldflags() string {
	return fmt.Sprintf("-s -w -X main.version=%s -X main.commit=%s -X main.date=%s", b.version, b.commit, b.date)
}

// compile builds the CLI for goos/goarch into dir and returns its path.
func (b build) compile(dir, goos, goarch string) (string, error) {
	exe := filepath.Join(dir, goos+"-"+goarch, "reconcile")
	if goos == "windows" {
		exe += ".exe"
	}
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags="+b.ldflags(), "-o", exe, "github.com/reconcile-p2p/reconcile/cmd/reconcile")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("build %s/%s: %w", goos, goarch, err)
	}
	return exe, nil
}

// check checks exe's build information for b's version and goos/goarch, and,
// when it is for this machine, that --version prints b's version and commit.
func (b build) check(exe, goos, goarch string) error {
	info, err := exec.Command("go", "version", "-m", exe).Output()
	if err != nil {
		return fmt.Errorf("go version -m %s: %w", exe, err)
	}
	for _, want := range []string{"\tmod\tgithub.com/reconcile-p2p/reconcile/cmd\t", "GOOS=" + goos + "\n", "GOARCH=" + goarch + "\n", "CGO_ENABLED=0\n", "-trimpath=true\n"} {
		if !strings.Contains(string(info), want) {
			return fmt.Errorf("%s: go version -m shows no %q:\n%s", exe, strings.TrimSpace(want), info)
		}
	}
	// With -trimpath the build information leaves -ldflags out (go.dev/issue/52372),
	// so the version and commit set by -X are looked for in the binary itself,
	// where the linker stores them as string data.
	data, err := os.ReadFile(exe)
	if err != nil {
		return err
	}
	for _, want := range []string{b.version, b.commit, b.date} {
		if !bytes.Contains(data, []byte(want)) {
			return fmt.Errorf("%s holds no %q: -ldflags -X did not take", exe, want)
		}
	}
	fmt.Printf("%s/%s: go version -m: the CLI, CGO_ENABLED=0, -trimpath; holds %s %s\n", goos, goarch, b.version, b.commit[:12])
	if goos != runtime.GOOS || goarch != runtime.GOARCH {
		return nil
	}
	got, err := exec.Command(exe, "--version").Output()
	if err != nil {
		return fmt.Errorf("%s --version: %w", exe, err)
	}
	want := fmt.Sprintf("reconcile %s (module github.com/reconcile-p2p/reconcile/cmd), revision %s (%s)", b.version, b.commit[:12], b.date)
	if !strings.HasPrefix(string(got), want) {
		return fmt.Errorf("%s --version printed %q, want it to start %q", exe, got, want)
	}
	fmt.Printf("%s/%s: --version: %s", goos, goarch, got)
	return nil
}

// archive packs exe and the README into out/reconcile_VERSION_GOOS_GOARCH.tar.gz
// (.zip for Windows), in a folder of that name, and returns its path.
func (b build) archive(out, exe, readme, goos, goarch string) (string, error) {
	name := fmt.Sprintf("reconcile_%s_%s_%s", strings.TrimPrefix(b.version, "v"), goos, goarch)
	mtime, err := time.Parse(time.RFC3339, b.date)
	if err != nil {
		mtime = time.Unix(0, 0)
	}
	files := []struct {
		src  string
		mode int64
	}{{exe, 0o755}, {readme, 0o644}}
	if goos == "windows" {
		path := filepath.Join(out, name+".zip")
		f, err := os.Create(path)
		if err != nil {
			return "", err
		}
		zw := zip.NewWriter(f)
		for _, src := range files {
			h := &zip.FileHeader{Name: name + "/" + filepath.Base(src.src), Method: zip.Deflate, Modified: mtime}
			h.SetMode(os.FileMode(src.mode))
			w, err := zw.CreateHeader(h)
			if err == nil {
				err = copyFile(w, src.src)
			}
			if err != nil {
				f.Close()
				return "", err
			}
		}
		if err := zw.Close(); err != nil {
			f.Close()
			return "", err
		}
		return path, f.Close()
	}
	path := filepath.Join(out, name+".tar.gz")
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	zw := gzip.NewWriter(f)
	tw := tar.NewWriter(zw)
	for _, src := range files {
		st, err := os.Stat(src.src)
		if err == nil {
			err = tw.WriteHeader(&tar.Header{Name: name + "/" + filepath.Base(src.src), Mode: src.mode, Size: st.Size(), ModTime: mtime, Typeflag: tar.TypeReg, Format: tar.FormatPAX})
		}
		if err == nil {
			err = copyFile(tw, src.src)
		}
		if err != nil {
			f.Close()
			return "", err
		}
	}
	for _, c := range []io.Closer{tw, zw} {
		if err := c.Close(); err != nil {
			f.Close()
			return "", err
		}
	}
	return path, f.Close()
}

// copyFile copies the file src to w.
func copyFile(w io.Writer, src string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(w, f)
	return err
}

// sha256File returns the hex SHA-256 of the file at path.
func sha256File(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
