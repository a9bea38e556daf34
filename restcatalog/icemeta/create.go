package icemeta

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

// NewTable builds the metadata of a table created by a create-table
// request: the schema's field ids renumbered from 1, the partition spec
// (spec 0, fields from 1000) and sort order (order 1, or 0 when unsorted)
// re-bound to the new ids by column name, format version from the
// "format-version" property (default 2; the property is not kept).
// spec and order may be nil.
func NewTable(schema, spec, order json.RawMessage, location string, props map[string]string, now time.Time) (*Table, error) {
	s, err := parseSchema(schema)
	if err != nil {
		return nil, fmt.Errorf("field \"schema\": %v", err)
	}
	fresh, _, err := freshSchema(s)
	if err != nil {
		return nil, fmt.Errorf("field \"schema\": %v", err)
	}
	oldNames := columnNames(fields2any(s.obj["fields"]))
	newIDs := map[string]int{}
	for id, name := range columnNames(fields2any(fresh.obj["fields"])) {
		newIDs[name] = id
	}
	remap := func(what string, old int) (int, error) {
		name, ok := oldNames[old]
		if !ok {
			return 0, fmt.Errorf("%s: source-id %d is not a column of the schema", what, old)
		}
		return newIDs[name], nil
	}
	fv := defaultTableFormatVersion
	p := map[string]string{}
	for k, v := range props {
		p[k] = v
	}
	if v, ok := p["format-version"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxTableFormatVersion {
			return nil, fmt.Errorf("property format-version=%q: must be 1, 2 or 3", v)
		}
		fv = n
		delete(p, "format-version")
	}
	if why := fresh.v3Only(); why != "" && fv < 3 {
		return nil, fmt.Errorf("field \"schema\": %s, which needs format version 3 (the table is version %d)", why, fv)
	}
	t := &Table{rest: object{}, FormatVersion: fv, UUID: uuid.NewString(), Location: location, LastUpdatedMs: now.UnixMilli(),
		LastColumnID: fresh.HighestFieldID(), Schemas: []*Schema{fresh}, CurrentSchemaID: 0, Properties: p,
		Refs: map[string]*Ref{}, LastPartitionID: initialPartitionFieldID - 1}
	if fv >= 3 {
		zero := int64(0)
		t.NextRowID = &zero
	}
	specObj := object{}
	var fields []SpecField
	if len(spec) > 0 && string(spec) != "null" {
		in, err := parseSpec(spec)
		if err != nil {
			return nil, fmt.Errorf("field \"partition-spec\": %v", err)
		}
		specObj = in.obj.clone()
		for i, f := range in.Fields {
			src, err := remap(fmt.Sprintf("partition field %q", f.Name), f.SourceID)
			if err != nil {
				return nil, fmt.Errorf("field \"partition-spec\": %v", err)
			}
			id := initialPartitionFieldID + i
			fields = append(fields, SpecField{SourceID: src, FieldID: &id, Name: f.Name, Transform: f.Transform})
		}
	}
	specObj.set("spec-id", 0)
	specObj.set("fields", nonNil(fields))
	sp, err := parseSpec(mustJSON(specObj))
	if err != nil {
		return nil, err
	}
	t.Specs = []*Spec{sp}
	t.LastPartitionID = max(t.LastPartitionID, sp.lastFieldID())
	orderObj := object{}
	var ofields []map[string]any
	if len(order) > 0 && string(order) != "null" {
		in, err := parseSortOrder(order)
		if err != nil {
			return nil, fmt.Errorf("field \"write-order\": %v", err)
		}
		orderObj = in.obj.clone()
		if _, err := in.obj.get("fields", &ofields); err != nil {
			return nil, fmt.Errorf("field \"write-order\": %v", err)
		}
		for _, f := range ofields {
			old, _ := f["source-id"].(float64)
			src, err := remap("sort field", int(old))
			if err != nil {
				return nil, fmt.Errorf("field \"write-order\": %v", err)
			}
			f["source-id"] = src
		}
	}
	orderID := 0
	if len(ofields) > 0 {
		orderID = 1
	}
	orderObj.set("order-id", orderID)
	orderObj.set("fields", nonNil(ofields))
	so, err := parseSortOrder(mustJSON(orderObj))
	if err != nil {
		return nil, err
	}
	t.SortOrders = []*SortOrder{so}
	t.DefaultSortOrderID = orderID
	return t, nil
}

// Codec is the metadata compression codec of a table's properties:
// "none", "gzip" or "zstd".
func (t *Table) Codec() (string, error) {
	c := strings.ToLower(t.Properties[PropCompressionCodec])
	switch c {
	case "", "none":
		return "none", nil
	case "gzip", "zstd":
		return c, nil
	}
	return "", fmt.Errorf("table property %s=%q: must be none, gzip or zstd", PropCompressionCodec, t.Properties[PropCompressionCodec])
}

// NewMetadataLocation names a table's next metadata file, as Iceberg does:
// <write.metadata.path or location/metadata>/<%05d version>-<uuid>
// [.gz|.zstd].metadata.json.
func (t *Table) NewMetadataLocation(version int) (string, error) {
	codec, err := t.Codec()
	if err != nil {
		return "", err
	}
	ext := map[string]string{"none": ".metadata.json", "gzip": ".gz.metadata.json", "zstd": ".zstd.metadata.json"}[codec]
	dir := t.Properties[PropMetadataPath]
	if dir == "" {
		u, err := url.Parse(t.Location)
		if err != nil {
			return "", fmt.Errorf("table location %q: %v", t.Location, err)
		}
		dir = u.JoinPath("metadata").String()
	} else if _, err := url.Parse(dir); err != nil {
		return "", fmt.Errorf("table property %s=%q: %v", PropMetadataPath, dir, err)
	}
	return strings.TrimSuffix(dir, "/") + "/" + fmt.Sprintf("%05d-%s%s", max(version, 0), uuid.NewString(), ext), nil
}
