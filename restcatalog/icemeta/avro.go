package icemeta

import (
	"bufio"
	"bytes"
	"compress/flate"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
)

// Manifest lists and manifests are Avro object container files. The
// catalog only needs a few string fields of them (for purge), so this is a
// small generic reader: it decodes each record by the file's own schema
// into maps, slices and scalars.

const maxAvroBlock = 512 << 20

type avroReader struct {
	r *bufio.Reader
}

func (a *avroReader) long() (int64, error) {
	u, err := binary.ReadUvarint(a.r)
	if err != nil {
		return 0, err
	}
	return int64(u>>1) ^ -int64(u&1), nil
}

func (a *avroReader) bytes() ([]byte, error) {
	n, err := a.long()
	if err != nil {
		return nil, err
	}
	if n < 0 || n > maxAvroBlock {
		return nil, fmt.Errorf("avro: bad length %d", n)
	}
	b := make([]byte, n)
	_, err = io.ReadFull(a.r, b)
	return b, err
}

// avroSchema is a parsed Avro schema.
type avroSchema struct {
	typ     string
	fields  []avroField   // record
	items   *avroSchema   // array, map values
	branch  []*avroSchema // union
	symbols []string      // enum
	size    int           // fixed
}

type avroField struct {
	name string
	s    *avroSchema
}

func parseAvroSchema(v any, named map[string]*avroSchema) (*avroSchema, error) {
	switch v := v.(type) {
	case string:
		switch v {
		case "null", "boolean", "int", "long", "float", "double", "bytes", "string":
			return &avroSchema{typ: v}, nil
		}
		if s, ok := named[v]; ok {
			return s, nil
		}
		return nil, fmt.Errorf("avro: unknown type %q", v)
	case []any:
		s := &avroSchema{typ: "union"}
		for _, b := range v {
			bs, err := parseAvroSchema(b, named)
			if err != nil {
				return nil, err
			}
			s.branch = append(s.branch, bs)
		}
		return s, nil
	case map[string]any:
		t, _ := v["type"].(string)
		switch t {
		case "record", "error":
			s := &avroSchema{typ: "record"}
			if n, ok := v["name"].(string); ok {
				named[n] = s
			}
			fs, _ := v["fields"].([]any)
			for _, f := range fs {
				fm, _ := f.(map[string]any)
				name, _ := fm["name"].(string)
				fsch, err := parseAvroSchema(fm["type"], named)
				if err != nil {
					return nil, err
				}
				s.fields = append(s.fields, avroField{name: name, s: fsch})
			}
			return s, nil
		case "enum":
			s := &avroSchema{typ: "enum"}
			for _, x := range v["symbols"].([]any) {
				str, _ := x.(string)
				s.symbols = append(s.symbols, str)
			}
			if n, ok := v["name"].(string); ok {
				named[n] = s
			}
			return s, nil
		case "fixed":
			size, _ := v["size"].(float64)
			s := &avroSchema{typ: "fixed", size: int(size)}
			if n, ok := v["name"].(string); ok {
				named[n] = s
			}
			return s, nil
		case "array":
			it, err := parseAvroSchema(v["items"], named)
			return &avroSchema{typ: "array", items: it}, err
		case "map":
			it, err := parseAvroSchema(v["values"], named)
			return &avroSchema{typ: "map", items: it}, err
		}
		return parseAvroSchema(t, named) // {"type":"long","logicalType":...}
	}
	return nil, fmt.Errorf("avro: bad schema %v", v)
}

func (a *avroReader) datum(s *avroSchema) (any, error) {
	switch s.typ {
	case "null":
		return nil, nil
	case "boolean":
		b, err := a.r.ReadByte()
		return b != 0, err
	case "int", "long":
		return a.long()
	case "float":
		var b [4]byte
		_, err := io.ReadFull(a.r, b[:])
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(b[:]))), err
	case "double":
		var b [8]byte
		_, err := io.ReadFull(a.r, b[:])
		return math.Float64frombits(binary.LittleEndian.Uint64(b[:])), err
	case "bytes":
		return a.bytes()
	case "string":
		b, err := a.bytes()
		return string(b), err
	case "fixed":
		b := make([]byte, s.size)
		_, err := io.ReadFull(a.r, b)
		return b, err
	case "enum":
		i, err := a.long()
		if err != nil {
			return nil, err
		}
		if i < 0 || int(i) >= len(s.symbols) {
			return nil, fmt.Errorf("avro: enum index %d out of range", i)
		}
		return s.symbols[i], nil
	case "union":
		i, err := a.long()
		if err != nil {
			return nil, err
		}
		if i < 0 || int(i) >= len(s.branch) {
			return nil, fmt.Errorf("avro: union branch %d out of range", i)
		}
		return a.datum(s.branch[i])
	case "record":
		m := make(map[string]any, len(s.fields))
		for _, f := range s.fields {
			v, err := a.datum(f.s)
			if err != nil {
				return nil, fmt.Errorf("field %s: %w", f.name, err)
			}
			m[f.name] = v
		}
		return m, nil
	case "array", "map":
		var arr []any
		var m map[string]any
		if s.typ == "map" {
			m = map[string]any{}
		}
		for {
			n, err := a.long()
			if err != nil {
				return nil, err
			}
			if n == 0 {
				break
			}
			if n < 0 {
				n = -n
				if _, err := a.long(); err != nil { // block size in bytes
					return nil, err
				}
			}
			for ; n > 0; n-- {
				var key string
				if s.typ == "map" {
					b, err := a.bytes()
					if err != nil {
						return nil, err
					}
					key = string(b)
				}
				v, err := a.datum(s.items)
				if err != nil {
					return nil, err
				}
				if s.typ == "map" {
					m[key] = v
				} else {
					arr = append(arr, v)
				}
			}
		}
		if s.typ == "map" {
			return m, nil
		}
		return arr, nil
	}
	return nil, fmt.Errorf("avro: unsupported type %s", s.typ)
}

// readAvroFile calls fn for every record of an Avro object container file.
func readAvroFile(r io.Reader, fn func(map[string]any) error) error {
	a := &avroReader{r: bufio.NewReader(r)}
	var magic [4]byte
	if _, err := io.ReadFull(a.r, magic[:]); err != nil || !bytes.Equal(magic[:], []byte("Obj\x01")) {
		return errors.New("not an Avro object container file")
	}
	meta, err := a.datum(&avroSchema{typ: "map", items: &avroSchema{typ: "bytes"}})
	if err != nil {
		return fmt.Errorf("avro header: %w", err)
	}
	hdr := meta.(map[string]any)
	var schemaJSON any
	sb, _ := hdr["avro.schema"].([]byte)
	if err := json.Unmarshal(sb, &schemaJSON); err != nil {
		return fmt.Errorf("avro schema: %w", err)
	}
	schema, err := parseAvroSchema(schemaJSON, map[string]*avroSchema{})
	if err != nil {
		return err
	}
	codec := "null"
	if c, ok := hdr["avro.codec"].([]byte); ok && len(c) > 0 {
		codec = string(c)
	}
	var sync [16]byte
	if _, err := io.ReadFull(a.r, sync[:]); err != nil {
		return fmt.Errorf("avro header: %w", err)
	}
	for {
		count, err := a.long()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("avro block: %w", err)
		}
		block, err := a.bytes()
		if err != nil {
			return fmt.Errorf("avro block: %w", err)
		}
		var mark [16]byte
		if _, err := io.ReadFull(a.r, mark[:]); err != nil || mark != sync {
			return errors.New("avro block: sync marker mismatch")
		}
		switch codec {
		case "null":
		case "deflate":
			if block, err = io.ReadAll(io.LimitReader(flate.NewReader(bytes.NewReader(block)), maxAvroBlock)); err != nil {
				return fmt.Errorf("avro deflate block: %w", err)
			}
		case "snappy":
			if len(block) < 4 {
				return errors.New("avro snappy block too short")
			}
			if block, err = snappy.Decode(nil, block[:len(block)-4]); err != nil {
				return fmt.Errorf("avro snappy block: %w", err)
			}
		case "zstandard":
			zr, err := zstd.NewReader(bytes.NewReader(block))
			if err != nil {
				return err
			}
			block, err = io.ReadAll(io.LimitReader(zr, maxAvroBlock))
			zr.Close()
			if err != nil {
				return fmt.Errorf("avro zstandard block: %w", err)
			}
		default:
			return fmt.Errorf("avro codec %q is not supported", codec)
		}
		br := &avroReader{r: bufio.NewReader(bytes.NewReader(block))}
		for ; count > 0; count-- {
			v, err := br.datum(schema)
			if err != nil {
				return fmt.Errorf("avro record: %w", err)
			}
			m, ok := v.(map[string]any)
			if !ok {
				return errors.New("avro record is not a record")
			}
			if err := fn(m); err != nil {
				return err
			}
		}
	}
}

// ManifestPaths lists the manifests a manifest list names.
func ManifestPaths(fsys FS, manifestList string) ([]string, error) {
	return avroStrings(fsys, manifestList, func(rec map[string]any) (string, bool) {
		s, ok := rec["manifest_path"].(string)
		return s, ok
	})
}

// DataFilePaths lists the data and delete files of a manifest's entries
// (live and deleted).
func DataFilePaths(fsys FS, manifest string) ([]string, error) {
	return avroStrings(fsys, manifest, func(rec map[string]any) (string, bool) {
		df, _ := rec["data_file"].(map[string]any)
		s, ok := df["file_path"].(string)
		return s, ok
	})
}

func avroStrings(fsys FS, loc string, pick func(map[string]any) (string, bool)) ([]string, error) {
	f, err := fsys.Open(loc)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	err = readAvroFile(f, func(rec map[string]any) error {
		s, ok := pick(rec)
		if !ok {
			return fmt.Errorf("record without the expected path field")
		}
		out = append(out, s)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", loc, err)
	}
	return out, nil
}
