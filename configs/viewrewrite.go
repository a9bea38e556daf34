package configs

// View rewrite modes (ViewTextRewriteConfig.Mode).
const (
	ViewRewrite         = "REWRITE"
	ViewRewriteDisabled = "DISABLED"
)

// ViewTextRewriteConfig is federation.view-text-rewrite.*: view SQL
// rewritten between external and backend names.
type ViewTextRewriteConfig struct {
	Mode                 string // REWRITE (default) | DISABLED
	PreserveOriginalText bool   // leave viewOriginalText as the client wrote it
}

func viewRewriteFeature() *feature {
	const pre = "federation.view-text-rewrite."
	v := func(c *Config) *ViewTextRewriteConfig { return &c.Federation.ViewTextRewrite }
	return &feature{
		id: "view-rewrite", title: "View SQL rewrite",
		on: func(c *Config) bool { return c.Federation.ViewTextRewrite.Mode == ViewRewrite && len(c.Catalogs) > 1 },
		off: func(c *Config) string {
			if c.Federation.ViewTextRewrite.Mode == ViewRewriteDisabled {
				return pre + "mode=DISABLED"
			}
			return "with one catalog, view SQL needs no rewriting"
		},
		loss: "pass view SQL unchanged, so a view of one catalog can resolve its tables in another",
		keys: []*keyDef{
			{pattern: pre + "mode", typ: enum(ViewRewrite, ViewRewriteDisabled), def: ViewRewrite, example: ViewRewriteDisabled,
				sw: true, gate: gateNonDefault, neutral: []string{ViewRewriteDisabled},
				meaning: "rewrite the database names in view SQL (viewExpandedText, viewOriginalText, Spark's view.default.database) between external and backend names",
				bind:    func(c *Config, _ match) any { return &v(c).Mode }},
			{pattern: pre + "preserve-original-text", typ: boolT{}, def: "false", example: "true",
				meaning: "leave viewOriginalText exactly as the client wrote it",
				bind:    func(c *Config, _ match) any { return &v(c).PreserveOriginalText }},
		},
	}
}
