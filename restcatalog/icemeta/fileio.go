package icemeta

import "io"

// FS is what reading a table's manifests needs of a file system: open a
// file by its location. The proxy's file layer (package fileio) serves it.
type FS interface {
	Open(loc string) (io.ReadCloser, error)
}
