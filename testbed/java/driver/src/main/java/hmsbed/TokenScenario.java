package hmsbed;

import java.util.List;

import org.apache.hadoop.hive.metastore.IMetaStoreClient;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.security.UserGroupInformation;
import org.apache.hadoop.security.token.Token;
import org.apache.hadoop.security.token.TokenIdentifier;

/**
 * token --op get|use|renew|cancel [--owner O --renewer R] [--token T] [--expect-fail]
 *
 * <p>Delegation tokens with the real HiveMetaStoreClient, the way HiveServer2 and Spark use them:
 * <ul>
 *   <li>get: getDelegationToken(owner, renewer) over the Kerberos session; the detail is the token string.</li>
 *   <li>use: put the token into the current user's credentials under a service name, point
 *       metastore.token.signature at it and open a client: HiveMetaStoreClient then authenticates with SASL
 *       DIGEST-MD5 on the token instead of Kerberos; then getAllDatabases.</li>
 *   <li>renew: renewDelegationToken; the detail is "expiry=MS".</li>
 *   <li>cancel: cancelDelegationToken.</li>
 * </ul>
 * With --expect-fail the step passes only when the operation fails (a cancelled, expired or forged token).
 */
final class TokenScenario implements Driver.Scenario {
  private static final String SIGNATURE = "hmsbed-token";

  @Override
  public void run(Steps steps, Driver.Args args) throws Exception {
    final String op = args.require("op");
    final boolean expectFail = args.flag("expect-fail");
    final String uri = args.require("uri");
    Steps.Body body;
    switch (op) {
      case "get":
        body = () -> {
          IMetaStoreClient c = Hms.open(uri);
          try {
            return c.getDelegationToken(args.require("owner"), args.require("renewer"));
          } finally {
            c.close();
          }
        };
        break;
      case "renew":
        body = () -> {
          IMetaStoreClient c = Hms.open(uri);
          try {
            return "expiry=" + c.renewDelegationToken(args.require("token"));
          } finally {
            c.close();
          }
        };
        break;
      case "cancel":
        body = () -> {
          IMetaStoreClient c = Hms.open(uri);
          try {
            c.cancelDelegationToken(args.require("token"));
            return null;
          } finally {
            c.close();
          }
        };
        break;
      case "use":
        body = () -> {
          Token<TokenIdentifier> t = new Token<>();
          t.decodeFromUrlString(args.require("token"));
          t.setService(new Text(SIGNATURE));
          UserGroupInformation.getCurrentUser().addToken(t);
          Security.EXTRA.put("metastore.token.signature", SIGNATURE);
          Security.EXTRA.put("hive.metastore.token.signature", SIGNATURE);
          IMetaStoreClient c = Hms.open(uri);
          try {
            List<String> dbs = c.getAllDatabases();
            return dbs.size() + " databases over DIGEST-MD5: " + dbs;
          } finally {
            c.close();
          }
        };
        break;
      default:
        throw new IllegalArgumentException("token --op must be get, use, renew or cancel, not " + op);
    }
    if (!expectFail) {
      steps.run(op, body);
      return;
    }
    steps.run(op + " (expected to fail)", () -> {
      String detail;
      try {
        detail = body.run();
      } catch (Exception e) {
        return "failed as expected: " + Steps.describe(e);
      }
      throw new Steps.Check("succeeded, but was expected to fail", detail);
    });
  }
}
