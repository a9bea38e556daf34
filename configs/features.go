package configs

// featureTable is the registry: every feature in parse (and key reference)
// order, each with its status. A feature that is built flips here, in one
// line, from StatusRefused to StatusImplemented, in the same change that
// makes its code read the feature's typed struct.
func featureTable() []*feature {
	return []*feature{
		withStatus(serverFeature(), StatusImplemented),
		withStatus(compatibilityFeature(), StatusImplemented),
		withStatus(frontendsFeature(), StatusImplemented),
		withStatus(managementFeature(), StatusImplemented),
		withStatus(catalogsFeature(), StatusImplemented),
		withStatus(backendClientFeature(), StatusImplemented),
		withStatus(sessionLifetimeFeature(), StatusRefused),
		withStatus(kerberosFeature(), StatusImplemented),
		withStatus(backendKerberosFeature(), StatusImplemented),
		withStatus(backendTLSFeature(), StatusImplemented),
		withStatus(compactProtocolFeature(), StatusRefused),
		withStatus(impersonationFeature(), StatusImplemented),
		withStatus(delegationTokensFeature(), StatusImplemented),
		withStatus(proxyUsersFeature(), StatusImplemented),
		withStatus(syntheticLockFeature(), StatusImplemented),
		withStatus(rateLimitFeature(), StatusImplemented),
		withStatus(circuitBreakerFeature(), StatusImplemented),
		withStatus(adaptiveTimeoutFeature(), StatusImplemented),
		withStatus(backendPollingFeature(), StatusImplemented),
		withStatus(hedgedReadFeature(), StatusImplemented),
		withStatus(degradedRoutingFeature(), StatusImplemented),
		withStatus(databaseListCacheFeature(), StatusImplemented),
		withStatus(databaseMetadataCacheFeature(), StatusImplemented),
		withStatus(databaseCacheRefreshFeature(), StatusImplemented),
		withStatus(cacheCoherenceFeature(), StatusImplemented),
		withStatus(refreshPrivilegesFeature(), StatusImplemented),
		withStatus(viewRewriteFeature(), StatusImplemented),
		withStatus(transactionalDDLGuardFeature(), StatusImplemented),
		withStatus(icebergPointerGuardFeature(), StatusImplemented),
		withStatus(dropPurgeFeature(), StatusImplemented),
		withStatus(storageFeature(), StatusImplemented),
		withStatus(restCatalogFeature(), StatusImplemented),
		withStatus(rangerFeature(), StatusImplemented),
		withStatus(rangerAuditFeature(), StatusRefused),
		withStatus(auditFeature(), StatusImplemented),
		withStatus(loggingFeature(), StatusImplemented),
	}
}

func withStatus(f *feature, s Status) *feature {
	f.status = s
	return f
}

// anyCatalog reports whether some catalog has the property.
func anyCatalog(c *Config, pred func(*CatalogConfig) bool) bool {
	for _, cat := range c.Catalogs {
		if pred(cat) {
			return true
		}
	}
	return false
}

// offBecause builds a feature's off text from a fixed sentence.
func offBecause(why string) func(*Config) string {
	return func(*Config) string { return why }
}
