package configs

import "net/netip"

// Transactional DDL guard modes (TransactionalDDLGuardConfig.Mode).
const (
	DDLGuardDisabled        = "DISABLED"
	DDLGuardReject          = "REJECT_TRANSACTIONAL"
	DDLGuardRewriteExternal = "REWRITE_TRANSACTIONAL_TO_EXTERNAL"
)

// GuardConfig is guard.*.
type GuardConfig struct {
	TransactionalDDL TransactionalDDLGuardConfig
}

// TransactionalDDLGuardConfig is guard.transactional-ddl.*: create_table* and
// alter_table* of a MANAGED_TABLE marked transactional are refused or turned
// into external tables.
type TransactionalDDLGuardConfig struct {
	Mode            string
	ClientAddresses []netip.Prefix // empty = every client
}

func transactionalDDLGuardFeature() *feature {
	const pre = "guard.transactional-ddl."
	g := func(c *Config) *TransactionalDDLGuardConfig { return &c.Guard.TransactionalDDL }
	return &feature{
		id: "transactional-ddl-guard", title: "Transactional DDL guard",
		on:   func(c *Config) bool { return c.Guard.TransactionalDDL.Mode != DDLGuardDisabled },
		off:  offBecause(pre + "mode=DISABLED"),
		loss: "let transactional managed tables be created",
		keys: []*keyDef{
			{pattern: pre + "mode", typ: enum(DDLGuardDisabled, DDLGuardReject, DDLGuardRewriteExternal), def: DDLGuardDisabled, example: DDLGuardReject,
				sw: true, gate: gateNonDefault,
				meaning: "`REJECT_TRANSACTIONAL` refuses a transactional MANAGED_TABLE in create_table*/alter_table*; `REWRITE_TRANSACTIONAL_TO_EXTERNAL` makes it an EXTERNAL_TABLE with external.table.purge=true",
				bind:    func(c *Config, _ match) any { return &g(c).Mode }},
			{pattern: pre + "client-addresses", typ: cidrListT{}, example: "10.10.0.15,10.20.0.0/16,2001:db8::/64",
				meaning: "the guard applies only to these client addresses and CIDR blocks; empty = every client",
				bind:    func(c *Config, _ match) any { return &g(c).ClientAddresses }},
		},
	}
}
