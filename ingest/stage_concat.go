package ingest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/apache/arrow-go/v18/parquet/file"
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
		// the reader reads the footer; f stays open for the copy
		r, err := file.NewParquetReader(f)
		if err != nil {
			f.Close()
			return fmt.Errorf("%s: %w", path, err)
		}
		md := r.MetaData()
		parts = append(parts, concatPart{f: f, md: md})
		body, err := concatenable(md, parts[0].md)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		parts[len(parts)-1].body = body
	}

	return writeFile(dst, func(out *os.File) error { return writeConcat(out, parts, srcs) })
}

// concatPart is a file concatParquet joins.
type concatPart struct {
	f    *os.File
	md   *metadata.FileMetaData
	body int64 // bytes of column chunks after the leading magic (see concatenable)
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

// concatenable says whether the file of footer md can be joined to the
// file of footer first: the same schema, and nothing whose offsets
// concatParquet does not move. It also reports how many bytes of column
// chunks follow the file's leading magic: what concatParquet copies.
func concatenable(md, first *metadata.FileMetaData) (body int64, err error) {
	if md.IsSetEncryptionAlgorithm() {
		return 0, fmt.Errorf("%w: encrypted", errNotConcatenable)
	}
	if !md.Schema.Equals(first.Schema) || !md.KeyValueMetadata().Equals(first.KeyValueMetadata()) {
		return 0, fmt.Errorf("%w: %w", errNotConcatenable, errSchemasDiffer)
	}
	magic := int64(len(parquetMagic))
	// the data lies between the leading magic and the footer
	limit := md.GetSourceFileSize() - 8 - int64(md.Size())
	end := magic
	for _, rg := range md.RowGroups {
		for _, cc := range rg.Columns {
			c := cc.MetaData
			switch {
			case c == nil || cc.IsSetFilePath() || cc.IsSetCryptoMetadata() || cc.EncryptedColumnMetadata != nil:
				return 0, fmt.Errorf("%w: a column chunk in another file, or encrypted", errNotConcatenable)
			case cc.IsSetOffsetIndexOffset() || cc.IsSetColumnIndexOffset() || c.IsSetBloomFilterOffset() || c.IsSetIndexPageOffset():
				return 0, fmt.Errorf("%w: page indexes or bloom filters", errNotConcatenable)
			}
			start := c.DataPageOffset
			if c.IsSetDictionaryPageOffset() && *c.DictionaryPageOffset < start {
				start = *c.DictionaryPageOffset
			}
			if start < magic || start+c.TotalCompressedSize > limit {
				return 0, fmt.Errorf("%w: a column chunk at %d-%d, outside the file's data (%d-%d)", errNotConcatenable, start, start+c.TotalCompressedSize, magic, limit)
			}
			end = max(end, start+c.TotalCompressedSize)
		}
	}
	return end - magic, nil
}
