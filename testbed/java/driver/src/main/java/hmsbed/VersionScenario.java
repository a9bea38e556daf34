package hmsbed;

import java.net.URI;

import org.apache.hadoop.hive.metastore.IMetaStoreClient;
import org.apache.hadoop.hive.metastore.api.ThriftHiveMetastore;
import org.apache.thrift.protocol.TBinaryProtocol;
import org.apache.thrift.transport.TSocket;
import org.apache.thrift.transport.TTransport;

/**
 * version: who is talking to whom. Steps: the client's Hive version, the server's fb303 getVersion (through the
 * generated Thrift client of this Hive version), and getAllDatabases through HiveMetaStoreClient.
 */
final class VersionScenario implements Driver.Scenario {
  @Override
  public void run(Steps steps, Driver.Args args) throws Exception {
    final String uri = args.require("uri");
    steps.run("clientVersion", () -> "hive " + Hms.clientVersion());
    // the raw fb303 call has no SASL transport: it runs only against plain metastores
    if (!Security.kerberos()) steps.run("getVersion", () -> {
      URI u = new URI(uri);
      TTransport transport = new TSocket(u.getHost(), u.getPort(), 60_000);
      transport.open();
      try {
        ThriftHiveMetastore.Client raw = new ThriftHiveMetastore.Client(new TBinaryProtocol(transport));
        return raw.getVersion();
      } finally {
        transport.close();
      }
    });
    steps.run("getAllDatabases", () -> {
      IMetaStoreClient c = Hms.open(uri);
      try {
        return String.valueOf(c.getAllDatabases());
      } finally {
        c.close();
      }
    });
  }
}
