package configs

// storageFeature: the file systems the Iceberg REST frontend (metadata files,
// purge) and the external-table drop purge reach, per catalog, from the
// catalog's conf.* keys as Hadoop names them. The keys are kept in the
// catalog's Conf map; package fileio reads and checks them when the proxy
// starts (and in check-config), naming the key of every problem.
func storageFeature() *feature {
	keep := func(*Config, match) any { return setter(func(any) error { return nil }) } // kept in CatalogConfig.Conf
	k := func(name string, typ valueType, example, meaning string) *keyDef {
		return hiveConfKey(name, "", &keyDef{typ: typ, example: example, meaning: meaning, bind: keep})
	}
	secret := func(kd *keyDef) *keyDef { kd.secret = true; return kd }
	return &feature{
		id: "storage", title: "File systems (HDFS, S3) of the REST frontend and the purges",
		keys: []*keyDef{
			k("fs.defaultFS", strT{nonEmpty: true}, "hdfs://ns1",
				"the file system of locations without one (`hdfs:///warehouse/t`): an `hdfs://` name service or NameNode"),
			k("dfs.nameservices", listT{}, "ns1",
				"HDFS HA name services: `hdfs://<name service>/...` locations go to the NameNodes of `dfs.ha.namenodes.<name service>`"),
			k("dfs.ha.namenodes.*", listT{}, "nn1,nn2",
				"`dfs.ha.namenodes.<name service>`: the NameNode ids of that name service"),
			k("dfs.namenode.rpc-address.*", strT{nonEmpty: true}, "nn1.example.com:8020",
				"`dfs.namenode.rpc-address.<name service>.<NameNode id>` (or `.<name service>` without HA): a NameNode's RPC host:port"),
			k("hadoop.security.authentication", enum("simple", "kerberos"), "kerberos",
				"`kerberos`: HDFS is reached with the proxy's keytab login (`security.client-principal` / `security.client-keytab`); `simple`: as `HADOOP_USER_NAME` (else the OS user)"),
			k("dfs.namenode.kerberos.principal", strT{nonEmpty: true}, "nn/_HOST@EXAMPLE.COM",
				"the NameNode's principal; required with `hadoop.security.authentication=kerberos`"),
			k("dfs.data.transfer.protection", strT{nonEmpty: true}, "privacy",
				"SASL on DataNode connections: `authentication`, `integrity` or `privacy` (the highest listed is used); needs Kerberos"),
			k("dfs.encrypt.data.transfer", boolT{}, "true",
				"DataNode connections encrypted with the NameNode's data encryption keys (implies `privacy`)"),
			k("dfs.client.use.datanode.hostname", boolT{}, "true",
				"connect to DataNodes by host name instead of address"),
			k("fs.s3a.endpoint", strT{nonEmpty: true}, "http://s3.example.com:9000",
				"S3 endpoint of `s3://` and `s3a://` locations: `http(s)://host[:port]` or `host[:port]`; default AWS"),
			k("fs.s3a.endpoint.region", strT{nonEmpty: true}, "eu-west-1", "S3 region (signing); default `us-east-1`"),
			k("fs.s3a.path.style.access", boolT{}, "true", "path-style requests (`endpoint/bucket/key`) instead of virtual hosts"),
			k("fs.s3a.connection.ssl.enabled", boolT{}, "false", "HTTPS when `fs.s3a.endpoint` names no scheme (default `true`)"),
			secret(k("fs.s3a.access.key", strT{nonEmpty: true}, "AKIA0EXAMPLE", "static S3 access key (with `fs.s3a.secret.key`); without both the AWS_* environment variables are used; never shown")),
			secret(k("fs.s3a.secret.key", strT{nonEmpty: true}, "example-secret", "static S3 secret key; never shown")),
			secret(k("fs.s3a.session.token", strT{nonEmpty: true}, "example-token", "S3 session token of temporary credentials; never shown")),
			k("fs.s3a.bucket.*", strT{nonEmpty: true}, "http://other.example.com",
				"`fs.s3a.bucket.<bucket>.<key>` overrides `fs.s3a.<key>` for one bucket (endpoint, region, path style, credentials; the credentials are never shown)"),
		},
	}
}
