// HiveTokens runs Hive's and Hadoop's own delegation-token classes (from the cached Hive 3.1.3 jars) against what
// the Go package writes: it decodes token strings, computes passwords, issues tokens, and reads and writes a
// ZooKeeper token store with Hive's ZooKeeperTokenStore and TokenStoreDelegationTokenSecretManager.
// Output: key=value lines on stdout; any failure exits non-zero with the exception on stderr.
import java.io.ByteArrayInputStream;
import java.io.DataInputStream;
import java.util.Base64;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hive.metastore.security.DelegationTokenIdentifier;
import org.apache.hadoop.hive.metastore.security.DelegationTokenSecretManager;
import org.apache.hadoop.hive.metastore.security.HadoopThriftAuthBridge;
import org.apache.hadoop.hive.metastore.security.TokenStoreDelegationTokenSecretManager;
import org.apache.hadoop.hive.metastore.security.ZooKeeperTokenStore;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.security.token.Token;
import org.apache.hadoop.security.token.delegation.AbstractDelegationTokenSecretManager.DelegationTokenInformation;
import org.apache.hadoop.security.token.delegation.DelegationKey;
import org.apache.hadoop.security.token.delegation.MetastoreDelegationTokenSupport;

public class HiveTokens {
    /** Reaches SecretManager's protected static HMAC helpers through a subclass. */
    static final class Hmac extends DelegationTokenSecretManager {
        Hmac() { super(1, 1, 1, 1); }
        static byte[] password(byte[] identifier, byte[] key) {
            return createPassword(identifier, createSecretKey(key));
        }
    }

    /** ZooKeeperTokenStore's constructor is protected. */
    static final class Store extends ZooKeeperTokenStore {
        Store(String connect, String znode) {
            Configuration conf = new Configuration(false);
            conf.set("hive.cluster.delegation.token.store.zookeeper.connectString", connect);
            conf.set("hive.cluster.delegation.token.store.zookeeper.znode", znode);
            // Hive 3.1.3 defaults to creator-only ACLs, which need an authenticated session; the Go store's
            // default (no Kerberos) is world ACLs, so name them. A SASL test names the sasl ACL it wants (the
            // session then authenticates through the JAAS Client section given to the JVM).
            conf.set("hive.cluster.delegation.token.store.zookeeper.acl", System.getProperty("hivetokens.acl", "world:anyone:cdrwa"));
            setConf(conf);
            init(null, HadoopThriftAuthBridge.Server.ServerMode.METASTORE);
        }
    }

    static String b64(byte[] b) { return Base64.getEncoder().encodeToString(b); }

    static DelegationTokenIdentifier identifier(byte[] raw) throws Exception {
        DelegationTokenIdentifier id = new DelegationTokenIdentifier();
        id.readFields(new DataInputStream(new ByteArrayInputStream(raw)));
        return id;
    }

    static void printIdentifier(String prefix, DelegationTokenIdentifier id) {
        System.out.println(prefix + "owner=" + id.getOwner());
        System.out.println(prefix + "renewer=" + id.getRenewer());
        System.out.println(prefix + "realUser=" + id.getRealUser());
        System.out.println(prefix + "issueDate=" + id.getIssueDate());
        System.out.println(prefix + "maxDate=" + id.getMaxDate());
        System.out.println(prefix + "sequenceNumber=" + id.getSequenceNumber());
        System.out.println(prefix + "masterKeyId=" + id.getMasterKeyId());
        System.out.println(prefix + "user=" + id.getUser().getUserName());
    }

    public static void main(String[] a) throws Exception {
        // Short names as the Go side's default mapping gives them: the first component of any principal.
        org.apache.hadoop.security.authentication.util.KerberosName.setRules("RULE:[1:$1] RULE:[2:$1] DEFAULT");
        switch (a[0]) {
        case "decode": { // decode TOKEN KEY_B64
            Token<DelegationTokenIdentifier> t = new Token<>();
            t.decodeFromUrlString(a[1]);
            System.out.println("kind=" + t.getKind());
            System.out.println("service=" + t.getService());
            printIdentifier("", identifier(t.getIdentifier()));
            byte[] pw = Hmac.password(t.getIdentifier(), Base64.getDecoder().decode(a[2]));
            System.out.println("passwordMatches=" + java.util.Arrays.equals(pw, t.getPassword()));
            break;
        }
        case "issue": { // issue OWNER RENEWER REALUSER ISSUE MAX SEQ KEYID KEY_B64
            DelegationTokenIdentifier id = new DelegationTokenIdentifier(new Text(a[1]), new Text(a[2]), new Text(a[3]));
            id.setIssueDate(Long.parseLong(a[4]));
            id.setMaxDate(Long.parseLong(a[5]));
            id.setSequenceNumber(Integer.parseInt(a[6]));
            id.setMasterKeyId(Integer.parseInt(a[7]));
            byte[] pw = Hmac.password(id.getBytes(), Base64.getDecoder().decode(a[8]));
            Token<DelegationTokenIdentifier> t = new Token<>(id.getBytes(), pw, id.getKind(), new Text());
            System.out.println("token=" + t.encodeToUrlString());
            break;
        }
        case "zk-read": { // zk-read CONNECT ZNODE
            Store s = new Store(a[1], a[2]);
            for (String k : s.getMasterKeys()) {
                DelegationKey key = new DelegationKey();
                TokenStoreDelegationTokenSecretManager.decodeWritable(key, k);
                System.out.println("key=" + key.getKeyId() + " " + key.getExpiryDate() + " " + b64(key.getEncodedKey()));
            }
            for (DelegationTokenIdentifier id : s.getAllDelegationTokenIdentifiers()) {
                DelegationTokenInformation info = s.getToken(id);
                System.out.println("token=" + b64(id.getBytes()) + " " + info.getRenewDate() + " "
                    + b64(MetastoreDelegationTokenSupport.encodeDelegationTokenInformation(info)));
            }
            s.close();
            break;
        }
        case "zk-manager": { // zk-manager CONNECT ZNODE GO_TOKEN OWNER RENEWER
            Store s = new Store(a[1], a[2]);
            long day = 86400000L;
            TokenStoreDelegationTokenSecretManager m =
                new TokenStoreDelegationTokenSecretManager(day, 7 * day, day, 3600000L, s);
            m.startThreads();
            System.out.println("verifiedUser=" + m.verifyDelegationToken(a[3]));
            String issued = m.getDelegationToken(a[4], a[5]);
            System.out.println("issued=" + issued);
            m.stopThreads();
            s.close();
            break;
        }
        default:
            throw new IllegalArgumentException("unknown mode " + a[0]);
        }
    }
}
