package app

import (
	"log/slog"

	"github.com/hms-proxy/hms-proxy/configs"
	"github.com/hms-proxy/hms-proxy/fileio"
)

// buildFiles builds the file layer of every catalog (fileio) from the
// catalogs' conf.* storage keys: the REST frontend's metadata and purge and
// the external-table drop purge reach HDFS and S3 through it. Nothing is
// contacted here; a bad key stops the start naming it. Storage keys take
// effect at start (a reload keeps the file layer built then).
func buildFiles(cfg *configs.Config, log *slog.Logger, midWrite func(string)) (*fileio.Resolver, error) {
	o := fileio.Options{ClientPrincipal: cfg.Security.ClientPrincipal, ClientKeytab: cfg.Security.ClientKeytab,
		MidWrite: midWrite, Log: log}
	for _, cc := range cfg.Catalogs {
		o.Catalogs = append(o.Catalogs, fileio.Catalog{Name: cc.Name, Conf: cc.Conf, Impersonate: cc.ImpersonationEnabled})
	}
	return fileio.New(o)
}

// CheckStorage validates the storage keys as the start would (for
// check-config); nothing is contacted.
func CheckStorage(cfg *configs.Config) error {
	r, err := buildFiles(cfg, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		return err
	}
	return r.Close()
}
