package skills

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
)

// A package may come from a versioned archive (options.skills.packages
// NAME.archive): a gzip-compressed tar (.tar.gz, .tgz) or a zip (.zip).
// Its digest is SHA-256 over the archive's bytes, checked before a byte of
// it is parsed, so `sha256sum review-1.2.0.tar.gz` gives the pin. It is
// then read in memory, never extracted: each entry's path is checked
// (relative, no '..', no absolute path), only directories and regular
// files are accepted (a symlink, hard link, device or FIFO is refused),
// and the package bounds (entries, bytes per file and in all, the
// unpacked-to-archive ratio) stop it before more is read.

// ArchiveFormat is how a package archive is read.
type ArchiveFormat int

const (
	// ArchiveTarGzip is a gzip-compressed tar file (.tar.gz, .tgz).
	ArchiveTarGzip ArchiveFormat = iota + 1
	// ArchiveZip is a zip file (.zip).
	ArchiveZip
)

// ArchiveFormatOf returns the format a file name's extension names, or 0.
func ArchiveFormatOf(name string) ArchiveFormat {
	n := strings.ToLower(name)
	switch {
	case strings.HasSuffix(n, ".tar.gz"), strings.HasSuffix(n, ".tgz"):
		return ArchiveTarGzip
	case strings.HasSuffix(n, ".zip"):
		return ArchiveZip
	}
	return 0
}

// archiveDigest is the digest of an archive's bytes.
func archiveDigest(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// readArchive reads a package archive held in memory into a tree under
// the package bounds. Every failure is an *Error: ErrInvalidPackage for a
// malformed archive, ErrUnsafePath for an entry that could leave the
// package or is not a directory or regular file, ErrLimitExceeded for a
// crossed bound.
func readArchive(data []byte, format ArchiveFormat) (*tree, error) {
	if len(data) > MaxPackageSourceBytes {
		return nil, limitError(fmt.Sprintf("the archive has more than %d bytes", MaxPackageSourceBytes))
	}
	b := newTreeBuilder(int64(len(data)))
	var err error
	switch format {
	case ArchiveTarGzip:
		err = b.readTarGzip(data)
	case ArchiveZip:
		err = b.readZip(data)
	default:
		err = &Error{Kind: ErrInvalidOptions, Code: CodeInvalidPath, Reason: "the archive must be a .tar.gz, .tgz or .zip file"}
	}
	if err != nil {
		return nil, err
	}
	return b.finish()
}

// budgetReader fails once more than n bytes have been read from r: it
// bounds what decompression yields, tar headers and padding included.
type budgetReader struct {
	r   io.Reader
	n   int64
	err error
}

func (br *budgetReader) Read(p []byte) (int, error) {
	if br.n <= 0 {
		return 0, br.err
	}
	if int64(len(p)) > br.n {
		p = p[:br.n]
	}
	n, err := br.r.Read(p)
	br.n -= int64(n)
	return n, err
}

func (b *treeBuilder) readTarGzip(data []byte) error {
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return invalidPackage("the archive is not gzip-compressed", err)
	}
	defer gz.Close()
	// Headers and padding count too: a tar of many empty entries or long
	// PAX records is bounded by the same budget, plus room for headers.
	limited := &budgetReader{r: gz, n: b.budget + int64(MaxPackageEntries+2)*1024,
		err: limitError("the archive unpacks to more than the package bounds allow; a decompression bomb is refused")}
	tr := tar.NewReader(limited)
	for {
		hdr, err := tr.Next()
		switch {
		case err == io.EOF:
			return nil
		case errors.Is(err, ErrLimitExceeded):
			return err
		case err != nil && !errors.Is(err, tar.ErrInsecurePath):
			return invalidPackage("the archive is not a readable tar file", err)
		}
		if err := b.count(); err != nil {
			return err
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := b.dir(hdr.Name); err != nil {
				return err
			}
			continue
		case tar.TypeReg:
		case tar.TypeXGlobalHeader:
			continue // git archive's commit comment: metadata, no entry
		case tar.TypeSymlink:
			return unsafeEntry(hdr.Name, "the entry is a symlink; a package holds only directories and regular files")
		case tar.TypeLink:
			return unsafeEntry(hdr.Name, "the entry is a hard link; a package holds only directories and regular files")
		case tar.TypeChar, tar.TypeBlock, tar.TypeFifo:
			return unsafeEntry(hdr.Name, "the entry is a device or FIFO; a package holds only directories and regular files")
		default:
			return unsafeEntry(hdr.Name, fmt.Sprintf("the entry's type %q is not a directory or regular file", hdr.Typeflag))
		}
		if _, err := entryPath(hdr.Name); err != nil {
			return err
		}
		if hdr.Size > MaxPackageFileBytes {
			return &Error{Kind: ErrLimitExceeded, Code: CodeTooLarge, Path: quotePath(hdr.Name),
				Reason: fmt.Sprintf("the file has %d bytes; a package file holds at most %d", hdr.Size, MaxPackageFileBytes)}
		}
		if err := b.charge(hdr.Size); err != nil {
			return err
		}
		body, err := io.ReadAll(tr)
		switch {
		case errors.Is(err, ErrLimitExceeded):
			return err
		case err != nil || int64(len(body)) != hdr.Size:
			return invalidPackage(fmt.Sprintf("the entry %s is truncated", quotePath(hdr.Name)), err)
		}
		if err := b.file(hdr.Name, body); err != nil {
			return err
		}
	}
}

func (b *treeBuilder) readZip(data []byte) error {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		return invalidPackage("the archive is not a readable zip file", err)
	}
	if len(zr.File) > MaxPackageEntries {
		return limitError(fmt.Sprintf("the package has more than %d entries", MaxPackageEntries))
	}
	for _, f := range zr.File {
		if err := b.count(); err != nil {
			return err
		}
		mode := f.Mode()
		switch {
		case mode&fs.ModeSymlink != 0:
			return unsafeEntry(f.Name, "the entry is a symlink; a package holds only directories and regular files")
		case mode.IsDir():
			if err := b.dir(f.Name); err != nil {
				return err
			}
			continue
		case !mode.IsRegular():
			return unsafeEntry(f.Name, "the entry is a device, FIFO or socket; a package holds only directories and regular files")
		}
		if _, err := entryPath(f.Name); err != nil {
			return err
		}
		if f.UncompressedSize64 > MaxPackageFileBytes {
			return &Error{Kind: ErrLimitExceeded, Code: CodeTooLarge, Path: quotePath(f.Name),
				Reason: fmt.Sprintf("the file has %d bytes; a package file holds at most %d", f.UncompressedSize64, MaxPackageFileBytes)}
		}
		body, err := b.readZipFile(f)
		if err != nil {
			return err
		}
		if err := b.file(f.Name, body); err != nil {
			return err
		}
	}
	return nil
}

// readZipFile reads one zip entry to its end (so its checksum is
// checked), never past its declared size: a size that lies is refused.
func (b *treeBuilder) readZipFile(f *zip.File) ([]byte, error) {
	size := int64(f.UncompressedSize64)
	if err := b.charge(size); err != nil {
		return nil, err
	}
	rc, err := f.Open()
	if err != nil {
		return nil, invalidPackage(fmt.Sprintf("the entry %s cannot be read", quotePath(f.Name)), err)
	}
	defer rc.Close()
	body, err := io.ReadAll(io.LimitReader(rc, size+1))
	if err != nil || int64(len(body)) != size {
		return nil, invalidPackage(fmt.Sprintf("the entry %s is corrupt or not its declared size", quotePath(f.Name)), err)
	}
	return body, nil
}
