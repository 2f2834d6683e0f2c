package ingest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/apache/arrow-go/v18/parquet/metadata"
)

// errNotConcatenable: the files cannot be joined by copying their row
// groups (their schemas differ, or they carry page indexes, bloom filters
// or encryption, whose offsets this does not move); mergeParquet decodes
// them instead.
var errNotConcatenable = errors.New("the files cannot be joined row group by row group")

// concatMinRows is the mean rows per file from which a merge copies the
// files' row groups as they are (concatParquet) instead of decoding and
// writing them again (mergeParquet). A busy run's files, of tens of
// thousands of rows each, are joined for the cost of copying their bytes;
// a slow run's files of a few hundred rows are rewritten into row groups
// of DuckDB's size, which costs little for so few rows.
const concatMinRows = 16_384

var parquetMagic = []byte("PAR1")

// concatParquet writes the row groups of srcs, in order and unchanged, as
// the Parquet file dst (synced): each file's column chunks are copied
// byte for byte, and one footer lists every row group with its offsets
// moved to where its bytes now lie. It decodes nothing. Files whose
// schemas differ, or that carry anything whose offsets it does not move,
// give errNotConcatenable and write nothing.
func concatParquet(dst string, srcs []string) error {
	parts := make([]concatPart, 0, len(srcs))
	defer func() {
		for _, p := range parts {
			p.f.Close()
		}
	}()
	for _, path := range srcs {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		md, body, err := readFooter(f)
		parts = append(parts, concatPart{f, md, body})
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if err := concatenable(md, body, parts[0].md); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}

	return writeFile(dst, func(out *os.File) error { return writeConcat(out, parts, srcs) })
}

// concatPart is a file concatParquet joins.
type concatPart struct {
	f    *os.File
	md   *metadata.FileMetaData
	body int64 // bytes of column chunks, after the leading magic
}

// writeConcat writes the row groups of parts (of files srcs) to out, and
// one footer over them.
func writeConcat(out *os.File, parts []concatPart, srcs []string) error {
	if _, err := out.Write(parquetMagic); err != nil {
		return err
	}
	md := parts[0].md
	var groups = md.RowGroups[:0:0]
	var rows int64
	at := int64(len(parquetMagic))
	for i, p := range parts {
		// the file's column chunks lie where they were, shifted by this
		shift := at - int64(len(parquetMagic))
		if _, err := io.Copy(out, io.NewSectionReader(p.f, int64(len(parquetMagic)), p.body)); err != nil {
			return fmt.Errorf("%s: %w", srcs[i], err)
		}
		for _, rg := range p.md.RowGroups {
			// (format.RowGroup is arrow-go's internal type: its fields are
			// reached through metadata.FileMetaData, not named)
			if rg.FileOffset != nil {
				o := *rg.FileOffset + shift
				rg.FileOffset = &o
			}
			for _, cc := range rg.Columns {
				if cc.FileOffset > 0 { // 0: not set
					cc.FileOffset += shift
				}
				cc.MetaData.DataPageOffset += shift
				if d := cc.MetaData.DictionaryPageOffset; d != nil {
					o := *d + shift
					cc.MetaData.DictionaryPageOffset = &o
				}
			}
			if rg.Ordinal != nil {
				o := int16(len(groups))
				rg.Ordinal = &o
			}
			groups = append(groups, rg)
			rows += rg.NumRows
		}
		at += p.body
	}
	md.RowGroups, md.NumRows = groups, rows
	n, err := md.WriteTo(out, nil)
	if err != nil {
		return err
	}
	var tail [8]byte
	binary.LittleEndian.PutUint32(tail[:4], uint32(n))
	copy(tail[4:], parquetMagic)
	_, err = out.Write(tail[:])
	return err
}

// readFooter reads the footer of the Parquet file f, and how many bytes
// lie between its leading magic and its footer.
func readFooter(f *os.File) (*metadata.FileMetaData, int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	size := fi.Size()
	var head, tail [8]byte
	if size < 12 {
		return nil, 0, fmt.Errorf("not a Parquet file: %d bytes", size)
	}
	if _, err := f.ReadAt(head[:4], 0); err != nil {
		return nil, 0, err
	}
	if _, err := f.ReadAt(tail[:], size-8); err != nil {
		return nil, 0, err
	}
	if !bytes.Equal(head[:4], parquetMagic) || !bytes.Equal(tail[4:], parquetMagic) {
		return nil, 0, errors.New("not a Parquet file (or an encrypted one): no PAR1 at its ends")
	}
	n := int64(binary.LittleEndian.Uint32(tail[:4]))
	body := size - 8 - n - int64(len(parquetMagic))
	if body < 0 {
		return nil, 0, fmt.Errorf("a footer of %d bytes in a file of %d", n, size)
	}
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, size-8-n); err != nil {
		return nil, 0, err
	}
	md, err := metadata.NewFileMetaData(buf, nil)
	if err != nil {
		return nil, 0, err
	}
	return md, body, nil
}

// concatenable says whether the file of footer md, with body bytes of
// column chunks, can be joined to the file of footer first: the same
// schema, and nothing whose offsets concatParquet does not move.
func concatenable(md *metadata.FileMetaData, body int64, first *metadata.FileMetaData) error {
	if md.IsSetEncryptionAlgorithm() {
		return fmt.Errorf("%w: encrypted", errNotConcatenable)
	}
	if !md.Schema.Equals(first.Schema) || !md.KeyValueMetadata().Equals(first.KeyValueMetadata()) {
		return fmt.Errorf("%w: %w", errNotConcatenable, errSchemasDiffer)
	}
	end := int64(len(parquetMagic)) + body
	for _, rg := range md.RowGroups {
		for _, cc := range rg.Columns {
			c := cc.MetaData
			switch {
			case c == nil || cc.IsSetFilePath() || cc.IsSetCryptoMetadata() || cc.EncryptedColumnMetadata != nil:
				return fmt.Errorf("%w: a column chunk in another file, or encrypted", errNotConcatenable)
			case cc.IsSetOffsetIndexOffset() || cc.IsSetColumnIndexOffset() || c.IsSetBloomFilterOffset() || c.IsSetIndexPageOffset():
				return fmt.Errorf("%w: page indexes or bloom filters", errNotConcatenable)
			}
			start := c.DataPageOffset
			if c.IsSetDictionaryPageOffset() && *c.DictionaryPageOffset < start {
				start = *c.DictionaryPageOffset
			}
			if start < int64(len(parquetMagic)) || start+c.TotalCompressedSize > end {
				return fmt.Errorf("%w: a column chunk at %d-%d, outside the file's %d bytes of data", errNotConcatenable, start, start+c.TotalCompressedSize, end)
			}
		}
	}
	return nil
}
